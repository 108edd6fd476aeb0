import type { Prices } from '../pricing/prices';
import { Hono, type Context } from 'hono';
import type { AppEnv } from '../app-env';
import { keyAuth } from '../auth/middleware';
import { batchCeilingMicroUsd } from '../admission/ceiling';
import type { Principal } from '../auth/resolver';
import type { BatchHold } from './object-queries';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { GatewayError } from '../lib/errors';
import type { ModelPolicy } from '../lib/model-policy';
import { requestBody } from '../lib/request-body';
import { bodyReader } from '../pipeline/body-reader';
import { BODIES } from '../pipeline/endpoint-row';
import type { ForwardCall } from '../proxy/forward';
import { validateMessagesBody, type ValidatedBody } from '../proxy/validate';
import { answeredRecord } from '../lib/call-record';
import { exchange, jsonOf, relay, type Answer } from './exchange';
import { checkBody } from './body-check';
import { listOf, run, streamed, type SurfaceDeps } from './files-routes';
import { atHome, madeOn } from './object-home';
import { assertVisible, ownerOf } from './ownership';

/** Admission's hold for a batch (admission/): a refusal, or the spend counters held until its results are recorded. */
export interface BatchHolds {
  holdBatch(
    principal: Principal,
    holdId: string,
    requests: readonly ValidatedBody[],
    untilMs: number,
  ): Promise<GatewayError | BatchHold['counters']>;
  releaseBatch(holdId: string, counters: BatchHold['counters']): Promise<void>;
}

export interface BatchDeps extends SurfaceDeps {
  /** Budgets and spend caps: a batch holds its ceiling at creation, given back as its results are recorded. */
  holds?: BatchHolds;
  /** Records an ended batch's results now: called before a delete takes them away. */
  settle?(batchId: string): Promise<void>;
  /** Keygate's address as clients reach it, never as a request's `Host` names it: `results_url` points there. */
  publicUrl: () => string;
  /** The gateway's prices: a batch's ceiling at the batch price. */
  prices: Prices;
}

/**
 * A batch that has not ended within 24 hours expires (same page, read 2026-11-25): its hold
 * lapses an hour after that at the latest, should no instance record its results.
 */
const HOLD_MS = 25 * 3_600_000;
const BATCHES = '/v1/messages/batches';
const TURN_MS = 5;

/**
 * Message Batches through Keygate: each request checked like a `/v1/messages` body, the batch
 * owned by its creator and followed to its end (batch-follower.ts), `results_url` pointing at
 * Keygate so the SDKs never send a Keygate key to the provider's host. A batch lives where it was
 * made: one an account upstream created is retrieved, canceled, deleted, listed and its results
 * read there alone, whatever the account's order is now (files-routes.ts' listOf for lists).
 */
export function batchRoutes(deps: BatchDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const auth = keyAuth(deps.proxy.resolver, ['live', 'test']);
  const one = (c: Context<AppEnv>, suffix = '') =>
    `${BATCHES}/${encodeURIComponent(c.req.param('id')!)}${suffix}`;
  const body = bodyReader({
    ...BODIES.batch,
    idleMs: deps.proxy.bodyIdleMs ?? 30_000,
  });
  app.post(BATCHES, body, auth, (c) => run(c, deps, `POST ${BATCHES}`, BATCHES, create));
  const shown = (b: Record<string, unknown>) => withResultsUrl(b, deps.publicUrl());
  app.get(BATCHES, auth, (c) => run(c, deps, `GET ${BATCHES}`, BATCHES, listOf('batch', BATCHES, shown)));
  app.get(`${BATCHES}/:id`, auth, (c) => run(c, deps, `GET ${BATCHES}/{id}`, one(c), owned));
  app.delete(`${BATCHES}/:id`, auth, (c) => run(c, deps, `DELETE ${BATCHES}/{id}`, one(c), owned));
  app.post(`${BATCHES}/:id/cancel`, auth, (c) =>
    run(c, deps, `POST ${BATCHES}/{id}/cancel`, one(c, '/cancel'), owned),
  );
  app.get(`${BATCHES}/:id/results`, auth, (c) =>
    run(c, deps, `GET ${BATCHES}/{id}/results`, one(c, '/results'), async (call, d) => {
      const id = c.req.param('id')!;
      await assertVisible(d.objects, call.principal, 'batch', id);
      await atHome(call, d.proxy, d.objects, 'batch', id);
      await streamed(call, d);
    }),
  );

  async function create(call: ForwardCall, d: SurfaceDeps, c: Context<AppEnv>): Promise<void> {
    const body = await requestBody(c).bytes();
    const parsed = await requestBody(c).json();
    const sizes = await checkBatch(parsed, d.proxy.maxPdfPages, call.principal.policy);
    await checkBody(call, d.proxy, d.objects, parsed);
    const hold = await holdFor(call, sizes);
    let created = false;
    try {
      const answer = await exchange(call, d.proxy, body, null);
      const batch = jsonOf(answer);
      const madeBy = madeOn(answer);
      if (typeof batch?.id === 'string') {
        const { key } = call.principal;
        await d.objects.claim(
          key.accountId,
          ownerOf(call.principal, 'batch', batch.id, call.groupId, madeBy),
        );
        const { accountId, keyId, memberId, app, environment, groupId } = answeredRecord(call, 200, null);
        await d.objects.followBatch({
          id: batch.id,
          ...{ accountId, keyId, memberId, app, environment, groupId },
          live: key.kind !== 'test',
          requestCount: sizes.length,
          reservedCents: hold.cents,
          hold: hold.counters.length > 0 ? { id: hold.id, counters: hold.counters } : null,
          upstreamId: madeBy,
        });
        created = true;
      }
      relay(call, d.proxy, answer, rewritten(answer, deps.publicUrl()), { requestBytes: body.length });
    } finally {
      // Not created (refused, or the provider unreachable): nothing will be recorded against the hold.
      if (!created && hold.counters.length > 0) await deps.holds?.releaseBatch(hold.id, hold.counters);
    }
  }

  /** The batch's hold on hard-capped budgets, or the refusal a single call over the cap gets. */
  async function holdFor(call: ForwardCall, sizes: ValidatedBody[]) {
    const id = `batch:${call.requestId}`;
    const cents = batchCeilingMicroUsd(sizes, deps.prices.catalog) / 10_000;
    if (!deps.holds) return { id, cents, counters: [] };
    const held = await deps.holds.holdBatch(call.principal, id, sizes, Date.now() + HOLD_MS);
    if (held instanceof GatewayError) throw held;
    return { id, cents, counters: held };
  }

  async function owned(call: ForwardCall, d: SurfaceDeps, c: Context<AppEnv>): Promise<void> {
    const id = c.req.param('id')!;
    await assertVisible(d.objects, call.principal, 'batch', id);
    if (call.req.method === 'DELETE') await deps.settle?.(id);
    await atHome(call, d.proxy, d.objects, 'batch', id);
    const answer = await exchange(call, d.proxy, null, null);
    if (call.req.method === 'DELETE' && answer.status === 200)
      await d.objects.forget(call.principal.key.accountId, id);
    relay(call, d.proxy, answer, rewritten(answer, deps.publicUrl()));
  }

  return app;
}

function rewritten(answer: Answer, origin: string): Buffer {
  const batch = jsonOf(answer);
  return batch?.type === 'message_batch'
    ? Buffer.from(JSON.stringify(withResultsUrl(batch, origin)))
    : answer.body;
}

/** The provider's `results_url` names its own host; through Keygate it names Keygate's. */
function withResultsUrl(batch: Record<string, unknown>, origin: string): Record<string, unknown> {
  if (typeof batch.results_url !== 'string' || typeof batch.id !== 'string') return batch;
  return { ...batch, results_url: `${origin}${BATCHES}/${encodeURIComponent(batch.id)}/results` };
}

/**
 * Every request is checked as a `/v1/messages` body would be (the error names its index); their
 * sizes (input bytes, PDF pages, max_tokens) are what the batch's hold is computed from.
 */
async function checkBatch(
  parsed: unknown,
  maxPdfPages: number,
  policy: ModelPolicy | null,
): Promise<ValidatedBody[]> {
  const requests = (parsed as { requests?: unknown } | null)?.requests;
  if (!Array.isArray(requests) || requests.length === 0)
    throw new GatewayError(
      'invalid_request_error',
      'requests: a non-empty list of {custom_id, params} is required.',
    );
  const sizes: ValidatedBody[] = [];
  const seen = new Set<string>();
  let turn = performance.now();
  for (const [i, r] of requests.entries()) {
    // Thousands of requests are checked in one go: let other tenants' calls run every few ms.
    if (performance.now() - turn > TURN_MS) {
      await nextTurn();
      turn = performance.now();
    }
    const id = (r as { custom_id?: unknown })?.custom_id;
    if (typeof id !== 'string' || id === '')
      throw new GatewayError('invalid_request_error', `requests[${i}].custom_id: a string is required.`);
    if (seen.has(id))
      throw new GatewayError(
        'invalid_request_error',
        `requests[${i}].custom_id: '${id}' appears twice in this batch.`,
      );
    seen.add(id);
    const params = (r as { params?: unknown }).params;
    try {
      sizes.push(await validateMessagesBody(Buffer.from(JSON.stringify(params ?? null)), { maxPdfPages }));
    } catch (err) {
      if (err instanceof GatewayError)
        throw new GatewayError('invalid_request_error', `requests[${i}].params: ${err.message}`);
      throw err;
    }
    const p = params as { model: string; max_tokens: number };
    // The key's model policy holds for each request, as for a single call.
    const refused = policy?.check(p.model, p.max_tokens);
    if (refused) throw new GatewayError('invalid_request_error', `requests[${i}].params.${refused}`);
  }
  return sizes;
}
