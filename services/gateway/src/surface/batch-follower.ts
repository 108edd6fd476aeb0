import { createHash } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { BATCH_ENDPOINT } from '../pricing/prices';
import { accruedRecord, type CallRecord } from '../lib/call-record';
import type { Logger } from '../lib/logger';
import type { SecretBox } from '../lib/secret-box';
import type { UpstreamAttempt, UpstreamTarget } from '../proxy/forward';
import type { AccountUpstreams } from '../proxy/routes';
import { providerKeyAttempt } from '../upstreams/request';
import type { BatchHold, OpenBatch } from './object-queries';
import type { Store } from '../store';
import { requestVia } from './exchange';
import type { Objects } from './ownership';

export interface FollowerDeps {
  store: Pick<Store, 'accounts'> & { objects: Objects };
  box: SecretBox;
  upstreams: { live: string; test: UpstreamTarget };
  /** The account's own upstreams: a batch one of them created is read there, with its credential. */
  accountUpstreams: Pick<AccountUpstreams, 'one'>;
  dispatcher: Dispatcher;
  timeoutMs: number;
  record(r: CallRecord): void;
  /** Resolves once every record handed to `record` is durable (the call log's flush). */
  flush(): Promise<void>;
  logger: Logger;
  /** Gives back a batch's hold on hard-capped budgets once its results are charged (admission/). */
  release?(hold: BatchHold): Promise<void>;
  /** How often the table of open batches is read. Default 1,000 ms. */
  tickMs?: number;
  /** Longest wait between two checks of one batch. Default 60 s. */
  maxBackoffMs?: number;
}

const LEASE_MS = 120_000;
const MAX_BACKOFF_MS = 60_000;
const VERSION = '2023-06-01';
/** The account upstream that created a batch is no longer the account's. */
const REMOVED = Symbol('upstream removed');

/**
 * Follows Keygate's open message batches to their end and records every result as a call at the
 * batch price, grouped by the batch id, whether or not the client ever fetches the results.
 * The open batches live in PostgreSQL (`batches`), so a restart picks them up where it left;
 * record ids are derived from batch and custom_id, so a result recorded twice counts once.
 * Each check backs off (doubling up to `maxBackoffMs`, or the provider's retry-after).
 *
 * A batch is read where it was made: the account upstream that created it (its own credential,
 * signature and workspace), else the provider key. If that upstream has been removed since, the
 * batch stays open, checked at the longest backoff with a warning each time, and is sent nowhere
 * else (another host with another key would not know it, and must not be sent its id): it is
 * recorded if the upstream comes back (a restore of its row), and its routes answer a 502 that
 * names the upstream (batch-routes.ts).
 */
export class BatchFollower {
  readonly #deps: FollowerDeps;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #stopped = false;
  /** Batches whose removed upstream was already reported. */
  readonly #saidRemoved = new Set<string>();

  constructor(deps: FollowerDeps) {
    this.#deps = deps;
  }

  start(): void {
    const tick = () => {
      if (this.#stopped) return;
      this.#running = this.check()
        .catch((error) => this.#deps.logger.warn('batch follower: check failed', { error }))
        .finally(() => {
          this.#running = null;
          if (!this.#stopped) this.#timer = setTimeout(tick, this.#deps.tickMs ?? 1_000);
          this.#timer?.unref();
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }

  /** Checks every batch that is due once. */
  async check(): Promise<void> {
    for (;;) {
      const due = await this.#deps.store.objects.dueBatches(10, LEASE_MS);
      if (due.length === 0) return;
      for (const [i, batch] of due.entries()) {
        // Stopping: the batches taken and not checked go back at once, not after the lease
        // (another instance, or this one restarted, takes them over without waiting 2 minutes).
        if (this.#stopped) return this.#deps.store.objects.releaseBatches(due.slice(i).map((b) => b.id));
        await this.#follow(batch).catch(async (error) => {
          this.#deps.logger.warn('batch follower: batch check failed', { batchId: batch.id, error });
          await this.#later(batch, null);
        });
      }
    }
  }

  /**
   * Records one batch now if it has ended (before a client deletes it at the provider, which
   * would take its results with it).
   */
  async settle(id: string): Promise<void> {
    const batch = await this.#deps.store.objects.takeBatch(id, LEASE_MS);
    if (batch) await this.#follow(batch);
  }

  async #follow(batch: OpenBatch): Promise<void> {
    const home = await this.#home(batch);
    if (home === REMOVED) return this.#homeRemoved(batch);
    if (!home) {
      this.#deps.logger.warn('batch follower: the account has no provider key to read this batch with', {
        batchId: batch.id,
      });
      return this.#recorded(batch, 0);
    }
    const path = `/v1/messages/batches/${encodeURIComponent(batch.id)}`;
    const res = await this.#get(home, path);
    const text = await res.body.text();
    if (res.statusCode === 404) {
      this.#deps.logger.warn('batch follower: the provider no longer knows this batch', {
        batchId: batch.id,
        upstream: batch.upstreamId,
      });
      return this.#recorded(batch, 0);
    }
    if (res.statusCode !== 200) return this.#later(batch, retryAfterMs(res.headers['retry-after']));
    const state = JSON.parse(text) as { processing_status?: string; ended_at?: string | null };
    if (state.processing_status !== 'ended') return this.#later(batch, null);
    const endedAt = state.ended_at ? new Date(state.ended_at) : new Date();
    const count = await this.#recordResults(batch, home, `${path}/results`, endedAt);
    await this.#deps.flush();
    await this.#recorded(batch, count);
    this.#deps.logger.info('batch follower: batch recorded', { batchId: batch.id, results: count });
  }

  /**
   * Its upstream is gone: kept open and checked at the longest backoff, never read elsewhere.
   * Said once per batch (a warning every check would repeat until an operator acts); later
   * checks say it at debug level.
   */
  #homeRemoved(batch: OpenBatch): Promise<void> {
    const said = this.#saidRemoved.has(batch.id);
    this.#saidRemoved.add(batch.id);
    this.#deps.logger[said ? 'debug' : 'warn'](
      'batch follower: the account upstream that created this batch was removed; the batch stays open, unread, until that upstream is restored',
      { batchId: batch.id, accountId: batch.accountId, upstream: batch.upstreamId },
    );
    return this.#deps.store.objects.rescheduleBatch(batch.id, this.#deps.maxBackoffMs ?? MAX_BACKOFF_MS);
  }

  /** The batch is done with: its hold goes (its results, charged as recorded, count instead). */
  async #recorded(batch: OpenBatch, results: number): Promise<void> {
    if (batch.hold) await this.#deps.release?.(batch.hold);
    await this.#deps.store.objects.batchRecorded(batch.id, results);
  }

  /** Reads the results as JSON lines, one record per line, never the whole file at once. */
  async #recordResults(
    batch: OpenBatch,
    home: UpstreamAttempt,
    path: string,
    endedAt: Date,
  ): Promise<number> {
    const res = await this.#get(home, path);
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`results answered ${res.statusCode}`);
    }
    let count = 0;
    let rest = '';
    const decoder = new TextDecoder();
    const take = (line: string) => {
      if (line.trim() === '') return;
      this.#deps.record(resultRecord(batch, JSON.parse(line), endedAt));
      count += 1;
    };
    for await (const chunk of res.body) {
      const lines = (rest + decoder.decode(chunk as Buffer, { stream: true })).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) take(line);
    }
    take(rest + decoder.decode());
    return count;
  }

  /** Where the batch lives: its upstream alone, or the provider key (the emulator for a test key). */
  async #home(batch: OpenBatch): Promise<UpstreamAttempt | typeof REMOVED | null> {
    const { dispatcher, upstreams } = this.#deps;
    if (!batch.live)
      return providerKeyAttempt(upstreams.test.baseUrl, upstreams.test.apiKey, dispatcher, null);
    if (batch.upstreamId)
      return (await this.#deps.accountUpstreams.one(batch.accountId, batch.upstreamId)) ?? REMOVED;
    const account = await this.#deps.store.accounts.get(batch.accountId);
    if (!account?.providerKeySealed) return null;
    const key = this.#deps.box.open(account.providerKeySealed, { purpose: 'provider-key', row: account.id });
    return providerKeyAttempt(upstreams.live, key, dispatcher, null);
  }

  #get(home: UpstreamAttempt, path: string) {
    const headers = { 'anthropic-version': VERSION, accept: 'application/json' };
    return requestVia(
      home,
      { req: { headers, method: 'GET' }, path, body: null, model: null },
      this.#deps.timeoutMs,
    );
  }

  #later(batch: OpenBatch, retryAfter: number | null): Promise<void> {
    const backoff = retryAfter ?? Math.min(batch.backoffMs * 2, this.#deps.maxBackoffMs ?? MAX_BACKOFF_MS);
    return this.#deps.store.objects.rescheduleBatch(batch.id, backoff);
  }
}

function retryAfterMs(value: string | string[] | undefined): number | null {
  const s = Number(Array.isArray(value) ? value[0] : value);
  return Number.isFinite(s) && s > 0 ? s * 1000 : null;
}

interface Result {
  custom_id?: string;
  result?: {
    type?: string;
    message?: Record<string, any>;
    error?: { type?: string; error?: { type?: string } };
  };
}

const STATUS_OF: Record<string, number> = { errored: 400, canceled: 499, expired: 408 };

/** One result line as a call of the batch's creator, grouped by the batch id. */
export function resultRecord(batch: OpenBatch, line: Result, endedAt: Date): CallRecord {
  const type = line.result?.type ?? 'errored';
  const message = type === 'succeeded' ? line.result?.message : undefined;
  const digest = createHash('sha256')
    .update(`${batch.id}\n${line.custom_id ?? ''}`)
    .digest('hex');
  return accruedRecord({
    id: `req_batch_${digest.slice(0, 32)}`,
    owner: batch,
    groupId: batch.id,
    endpoint: BATCH_ENDPOINT,
    batch: true,
    model: typeof message?.model === 'string' ? message.model : null,
    status: message ? 200 : (STATUS_OF[type] ?? 400),
    errorType: message ? null : (line.result?.error?.error?.type ?? line.result?.error?.type ?? type),
    usage: message?.usage ?? null,
    upstreamMessageId: typeof message?.id === 'string' ? message.id : null,
    latencyMs: endedAt.getTime() - batch.createdAt.getTime(),
    createdAt: endedAt,
    upstream: batch.upstreamId,
  });
}
