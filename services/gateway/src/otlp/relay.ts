import { fetch, type Dispatcher } from 'undici';
import type { EgressPolicy } from '../lib/egress';
import type { Logger } from '../lib/logger';
import type { EventRow, Store } from '../store';

/** Relayed exports in flight at most; past it a batch is dropped (and counted), never queued without end. */
const MAX_IN_FLIGHT = 64;
const TTL_MS = 30_000;

export interface RelayStats {
  sent: number;
  failed: number;
  dropped: number;
}

/**
 * Sends what the receiver accepted on to the account's own OpenTelemetry collector
 * (`<url>/v1/metrics`, `<url>/v1/logs`), after the answer and off the receiver's path: a slow
 * or dead collector never delays or fails an export. Every connection passes the egress policy.
 * The member's credential is not forwarded. Logs are relayed as the receiver kept them
 * (OTLP/JSON of the stripped events): no prompt text leaves through the relay either.
 */
export class OtlpRelay {
  readonly #store: Pick<Store, 'telemetry'>;
  readonly #dispatcher: Dispatcher;
  readonly #logger: Logger;
  readonly #targets = new Map<string, { url: string | null; until: number }>();
  readonly #pending = new Set<Promise<void>>();
  readonly stats: RelayStats = { sent: 0, failed: 0, dropped: 0 };

  constructor(store: Pick<Store, 'telemetry'>, egress: EgressPolicy, logger: Logger, timeoutMs = 10_000) {
    this.#store = store;
    this.#dispatcher = egress.dispatcher({ connectTimeoutMs: timeoutMs });
    this.#logger = logger;
  }

  /** Forgets an account's cached target (after it is changed on this instance). */
  forget(accountId: string): void {
    this.#targets.delete(accountId);
  }

  send(
    accountId: string,
    signal: 'metrics' | 'logs',
    bytes: Uint8Array,
    encoding: 'protobuf' | 'json',
    events?: EventRow[],
  ): void {
    if (this.#pending.size >= MAX_IN_FLIGHT) {
      this.stats.dropped++;
      return;
    }
    const job = this.#deliver(accountId, signal, bytes, encoding, events).finally(() =>
      this.#pending.delete(job),
    );
    this.#pending.add(job);
  }

  /** Waits for the relays in flight (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#pending.size) await Promise.allSettled([...this.#pending]);
  }

  async close(): Promise<void> {
    await this.idle();
    await this.#dispatcher.close();
  }

  async #target(accountId: string): Promise<string | null> {
    const now = Date.now();
    const cached = this.#targets.get(accountId);
    if (cached && cached.until > now) return cached.url;
    const url = await this.#store.telemetry.relay(accountId);
    this.#targets.set(accountId, { url, until: now + TTL_MS });
    return url;
  }

  async #deliver(
    accountId: string,
    signal: 'metrics' | 'logs',
    bytes: Uint8Array,
    encoding: 'protobuf' | 'json',
    events: EventRow[] | undefined,
  ): Promise<void> {
    try {
      const base = await this.#target(accountId);
      if (!base) return;
      const body = events ? JSON.stringify(logsExport(events)) : bytes;
      const type = events || encoding === 'json' ? 'application/json' : 'application/x-protobuf';
      const res = await fetch(`${base.replace(/\/+$/, '')}/v1/${signal}`, {
        method: 'POST',
        headers: { 'content-type': type },
        body,
        dispatcher: this.#dispatcher,
        signal: AbortSignal.timeout(10_000),
      });
      await res.arrayBuffer();
      if (res.ok) this.stats.sent++;
      else {
        this.stats.failed++;
        this.#logger.info('otlp relay refused by the collector', { accountId, status: res.status });
      }
    } catch (error) {
      this.stats.failed++;
      // The error names no URL: a refusal by the egress policy says only that.
      this.#logger.info('otlp relay failed', { accountId, error: (error as Error).message });
    }
  }
}

const attr = (key: string, v: string | number | boolean | null) =>
  v === null
    ? []
    : [
        {
          key,
          value:
            typeof v === 'string'
              ? { stringValue: v }
              : typeof v === 'boolean'
                ? { boolValue: v }
                : { doubleValue: v },
        },
      ];

/** The kept events as an OTLP/JSON logs export request. */
export function logsExport(events: EventRow[]) {
  return {
    resourceLogs: [
      {
        resource: { attributes: attr('service.name', 'claude-code') },
        scopeLogs: [
          {
            scope: { name: 'keygate' },
            logRecords: events.map((e) => ({
              timeUnixNano: String(BigInt(e.at.getTime()) * 1_000_000n),
              body: { stringValue: `claude_code.${e.name}` },
              attributes: [
                ...attr('event.name', e.name),
                ...attr('session.id', e.sessionId),
                ...attr('prompt.id', e.promptId),
                ...attr('request_id', e.requestId),
                ...attr('model', e.model),
                ...attr('cost_usd', e.costUsd),
                ...attr('duration_ms', e.durationMs),
                ...attr('input_tokens', e.inputTokens),
                ...attr('output_tokens', e.outputTokens),
                ...attr('cache_read_tokens', e.cacheReadTokens),
                ...attr('cache_creation_tokens', e.cacheCreationTokens),
                ...Object.entries(e.attrs).flatMap(([k, v]) => attr(k, v)),
              ],
            })),
          },
        ],
      },
    ],
  };
}
