import { EmulatorError, invalid } from './errors';
import { jsonHeaders, sendJson, type Exchange } from './http';
import { randomBase62 } from './ids';
import type { Ledger } from './ledger';
import { page } from './files';
import { messageJson, planReply } from './reply';
import type { Scenario } from './scenarios';
import { measure } from './tokens';
import type { Json } from './types';
import { apiVersionOf, betasOf, validateMessages } from './validate';

/**
 * The provider's Message Batches API (`/v1/messages/batches`): create, retrieve, list, cancel,
 * delete, results as JSON lines. Shapes from the official TypeScript SDK 1.11's
 * `resources/messages/batches` types and https://docs.claude.com/en/docs/build-with-claude/batch-processing,
 * read 2026-11-25. A batch ends `batchMs` after creation; each request's answer is then written
 * to the ledger as a `batch` entry (the batch price applies to those: 50% of input and output).
 */
export interface BatchOptions {
  /** How long a batch stays in progress. Default 2,000 ms. */
  batchMs?: number;
}

interface Request {
  custom_id: string;
  params: Json;
}

interface Batch {
  object: {
    id: string;
    type: 'message_batch';
    processing_status: 'in_progress' | 'canceling' | 'ended';
    request_counts: Record<'processing' | 'succeeded' | 'errored' | 'canceled' | 'expired', number>;
    ended_at: string | null;
    created_at: string;
    expires_at: string;
    archived_at: string | null;
    cancel_initiated_at: string | null;
    results_url: string | null;
  };
  requests: Request[];
  results: string[];
  headers: Record<string, string>;
  timer: NodeJS.Timeout | null;
}

const MAX_REQUESTS = 100_000;
const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;

export class BatchStore {
  readonly batches = new Map<string, Batch>();
  readonly #ledger: Ledger;
  readonly #batchMs: number;

  constructor(ledger: Ledger, opts: BatchOptions = {}) {
    this.#ledger = ledger;
    this.#batchMs = opts.batchMs ?? 2_000;
  }

  get(id: string): Batch {
    const batch = this.batches.get(id);
    if (!batch) throw new EmulatorError('not_found_error', `Message batch not found: ${id}`);
    return batch;
  }

  create(body: unknown, headers: Record<string, string>, scenario: Scenario): Batch {
    const requests = (body as Json | null)?.requests;
    if (!Array.isArray(requests) || requests.length === 0)
      throw invalid('requests: List should have at least 1 item');
    if (requests.length > MAX_REQUESTS) throw invalid(`requests: at most ${MAX_REQUESTS} requests per batch`);
    const seen = new Set<string>();
    const betas = betasOf(headers['anthropic-beta']);
    const version = apiVersionOf(headers['anthropic-version']);
    requests.forEach((r: Json, i) => {
      const id = r?.custom_id;
      if (typeof id !== 'string' || !CUSTOM_ID.test(id))
        throw invalid(`requests.${i}.custom_id: must be 1 to 64 characters of letters, digits, '_' and '-'`);
      if (seen.has(id)) throw invalid(`requests.${i}.custom_id: duplicate custom_id '${id}'`);
      seen.add(id);
      try {
        validateMessages(r.params, 'messages', betas, version);
      } catch (err) {
        if (err instanceof EmulatorError) throw invalid(`requests.${i}.params.${err.message}`);
        throw err;
      }
      if ((r.params as Json).stream === true)
        throw invalid(`requests.${i}.params.stream: not supported in batches`);
    });
    const now = Date.now();
    const batch: Batch = {
      object: {
        id: `msgbatch_01${randomBase62(22)}`,
        type: 'message_batch',
        processing_status: 'in_progress',
        request_counts: { processing: requests.length, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
        ended_at: null,
        created_at: new Date(now).toISOString(),
        expires_at: new Date(now + 86_400_000).toISOString(),
        archived_at: null,
        cancel_initiated_at: null,
        results_url: null,
      },
      requests: requests as Request[],
      results: [],
      headers,
      timer: null,
    };
    batch.timer = setTimeout(() => this.#end(batch, scenario, false), this.#batchMs);
    batch.timer.unref();
    this.batches.set(batch.object.id, batch);
    return batch;
  }

  cancel(id: string): Batch {
    const batch = this.get(id);
    if (batch.object.processing_status === 'ended') return batch;
    batch.object.processing_status = 'canceling';
    batch.object.cancel_initiated_at = new Date().toISOString();
    if (batch.timer) clearTimeout(batch.timer);
    // Canceling is not instant at the provider either; the batch ends shortly after.
    batch.timer = setTimeout(() => this.#end(batch, null, true), Math.min(this.#batchMs, 200));
    batch.timer.unref();
    return batch;
  }

  delete(id: string): Json {
    const batch = this.get(id);
    if (batch.object.processing_status !== 'ended')
      throw invalid(
        `Message batch ${id} is still in progress; cancel it and wait for it to end before deleting.`,
      );
    this.batches.delete(id);
    return { id, type: 'message_batch_deleted' };
  }

  #end(batch: Batch, scenario: Scenario | null, canceled: boolean): void {
    batch.timer = null;
    const counts = batch.object.request_counts;
    for (const r of batch.requests) {
      counts.processing -= 1;
      if (canceled || !scenario) {
        counts.canceled += 1;
        batch.results.push(JSON.stringify({ custom_id: r.custom_id, result: { type: 'canceled' } }));
        continue;
      }
      const body = r.params as never;
      const { total } = measure(body);
      const plan = planReply(body, scenario, { input: total, creation5m: 0, creation1h: 0, read: 0 });
      const entry = this.#ledger.open(`req_01${randomBase62(22)}`, 'batch', batch.headers, null, Date.now());
      entry.batchId = batch.object.id;
      entry.customId = r.custom_id;
      entry.messageId = plan.id;
      entry.model = plan.model;
      entry.status = 200;
      this.#ledger.close(entry, true, Date.now(), plan.usage);
      counts.succeeded += 1;
      batch.results.push(
        `{"custom_id":${JSON.stringify(r.custom_id)},"result":{"type":"succeeded","message":${messageJson(plan)}}}`,
      );
    }
    batch.object.processing_status = 'ended';
    batch.object.ended_at = new Date().toISOString();
  }
}

/** Routes `/v1/messages/batches…`; false when the path is not a batches path. */
export function handleBatches(
  ex: Exchange,
  store: BatchStore,
  path: string,
  query: URLSearchParams,
  body: Buffer | null,
  scenario: Scenario,
): boolean {
  const m = /^\/v1\/messages\/batches(?:\/([^/]+)(\/results|\/cancel)?)?$/.exec(path);
  if (!m) return false;
  const [, id, action] = m;
  const method = ex.req.method;
  const origin = `http://${ex.req.headers.host ?? '127.0.0.1'}`;
  const view = (b: Batch) => ({
    ...b.object,
    results_url:
      b.object.processing_status === 'ended' ? `${origin}/v1/messages/batches/${b.object.id}/results` : null,
  });
  const send = (value: unknown) => sendJson(ex, 200, JSON.stringify(value), jsonHeaders(ex.requestId, false));
  if (!id && method === 'POST') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body?.toString('utf8') ?? '');
    } catch {
      throw invalid('The request body is not valid JSON.');
    }
    send(view(store.create(parsed, ex.req.headers as Record<string, string>, scenario)));
  } else if (!id && method === 'GET') {
    const list = page(
      [...store.batches.values()].map((b) => view(b)),
      query,
    );
    send(list);
  } else if (id && !action && method === 'GET') send(view(store.get(id)));
  else if (id && !action && method === 'DELETE') send(store.delete(id));
  else if (id && action === '/cancel' && method === 'POST') send(view(store.cancel(id)));
  else if (id && action === '/results' && method === 'GET') {
    const batch = store.get(id);
    if (batch.object.processing_status !== 'ended')
      throw new EmulatorError('not_found_error', `Results for message batch ${id} are not available yet.`);
    const out = batch.results.length ? `${batch.results.join('\n')}\n` : '';
    ex.res.writeHead(200, ['content-type', 'application/binary', 'request-id', ex.requestId]);
    ex.res.end(out);
    if (ex.entry) {
      ex.entry.status = 200;
      ex.ledger.close(ex.entry, true, Date.now());
    }
  } else throw new EmulatorError('not_found_error', `Not found: ${method} ${path}`);
  return true;
}
