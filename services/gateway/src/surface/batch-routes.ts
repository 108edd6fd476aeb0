import { Hono, type Context } from 'hono';
import type { AppEnv } from '../app-env';
import { keyAuth } from '../auth/middleware';
import { callCost, NO_TOKENS } from '../pricing/prices';
import { GatewayError } from '../lib/errors';
import type { ModelPolicy } from '../lib/model-policy';
import { readBody } from '../proxy/body';
import type { ForwardCall } from '../proxy/forward';
import { validateMessagesBody } from '../proxy/validate';
import { answered } from './call';
import { exchange, jsonOf, relay, type Answer } from './exchange';
import { assertFileRefs, fileRefs } from './file-refs';
import { run, streamed, type SurfaceDeps } from './files-routes';
import { assertVisible, ownerOf, visibleIds } from './ownership';

export interface BatchDeps extends SurfaceDeps {
  /** Budget reservations for a batch (the admission module's); settled as its results are recorded. */
  reserve?(call: ForwardCall, cents: number): void | Promise<void>;
  /** Records an ended batch's results now: called before a delete takes them away. */
  settle?(batchId: string): Promise<void>;
}

/** The provider's cap on a batch body (https://docs.claude.com/en/docs/build-with-claude/batch-processing, read 2026-11-25). */
const MAX_BATCH_BYTES = 256 * 1024 * 1024;
const BATCHES = '/v1/messages/batches';

/**
 * Message Batches through Keygate: each request checked like a `/v1/messages` body, the batch
 * owned by its creator and followed to its end (batch-follower.ts), `results_url` pointing at
 * Keygate so the SDKs never send a Keygate key to the provider's host.
 */
export function batchRoutes(deps: BatchDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const auth = keyAuth(deps.proxy.resolver, ['live', 'test']);
  const one = (c: Context<AppEnv>, suffix = '') =>
    `${BATCHES}/${encodeURIComponent(c.req.param('id')!)}${suffix}`;
  app.post(BATCHES, auth, (c) => run(c, deps, `POST ${BATCHES}`, BATCHES, create));
  app.get(BATCHES, auth, (c) => run(c, deps, `GET ${BATCHES}`, BATCHES, list));
  app.get(`${BATCHES}/:id`, auth, (c) => run(c, deps, `GET ${BATCHES}/{id}`, one(c), owned));
  app.delete(`${BATCHES}/:id`, auth, (c) => run(c, deps, `DELETE ${BATCHES}/{id}`, one(c), owned));
  app.post(`${BATCHES}/:id/cancel`, auth, (c) =>
    run(c, deps, `POST ${BATCHES}/{id}/cancel`, one(c, '/cancel'), owned),
  );
  app.get(`${BATCHES}/:id/results`, auth, (c) =>
    run(c, deps, `GET ${BATCHES}/{id}/results`, one(c, '/results'), async (call, d) => {
      await assertVisible(d.objects, call.principal, 'batch', c.req.param('id')!);
      await streamed(call, d);
    }),
  );

  async function create(call: ForwardCall, d: SurfaceDeps, c: Context<AppEnv>): Promise<void> {
    const body = await readBody(call.req, { limit: MAX_BATCH_BYTES, idleMs: d.proxy.bodyIdleMs ?? 30_000 });
    const { count, reserveCents, files } = await checkBatch(body, d.proxy.maxPdfPages, call.principal.policy);
    await assertFileRefs(d.objects, call.principal, files);
    await deps.reserve?.(call, reserveCents);
    const answer = await exchange(call, d.proxy, body, null);
    const batch = jsonOf(answer);
    if (typeof batch?.id === 'string') {
      const { key } = call.principal;
      await d.objects.claim(key.accountId, ownerOf(call.principal, 'batch', batch.id, call.groupId));
      const { accountId, keyId, memberId, app, environment, groupId } = answered(call, 200, null);
      await d.objects.followBatch({
        id: batch.id,
        ...{ accountId, keyId, memberId, app, environment, groupId },
        live: key.kind !== 'test',
        requestCount: count,
        reservedCents: reserveCents,
      });
    }
    relay(call, d.proxy, answer, rewritten(answer, c), { requestBytes: body.length });
  }

  async function list(call: ForwardCall, d: SurfaceDeps, c: Context<AppEnv>): Promise<void> {
    const answer = await exchange(call, d.proxy, null, null);
    const page = jsonOf(answer);
    if (!page || !Array.isArray(page.data)) return relay(call, d.proxy, answer);
    const visible = await visibleIds(
      d.objects,
      call.principal,
      page.data.map((b: { id?: unknown }) => String(b?.id)),
    );
    const data = page.data
      .filter((b: { id?: unknown }) => visible.has(String(b?.id)))
      .map((b: Record<string, unknown>) => withResultsUrl(b, c));
    relay(call, d.proxy, answer, Buffer.from(JSON.stringify({ ...page, data })));
  }

  async function owned(call: ForwardCall, d: SurfaceDeps, c: Context<AppEnv>): Promise<void> {
    const id = c.req.param('id')!;
    await assertVisible(d.objects, call.principal, 'batch', id);
    if (call.req.method === 'DELETE') await deps.settle?.(id);
    const answer = await exchange(call, d.proxy, null, null);
    if (call.req.method === 'DELETE' && answer.status === 200)
      await d.objects.forget(call.principal.key.accountId, id);
    relay(call, d.proxy, answer, rewritten(answer, c));
  }

  return app;
}

function rewritten(answer: Answer, c: Context<AppEnv>): Buffer {
  const batch = jsonOf(answer);
  return batch?.type === 'message_batch'
    ? Buffer.from(JSON.stringify(withResultsUrl(batch, c)))
    : answer.body;
}

/** The provider's `results_url` names its own host; through Keygate it names Keygate's. */
function withResultsUrl(batch: Record<string, unknown>, c: Context<AppEnv>): Record<string, unknown> {
  if (typeof batch.results_url !== 'string' || typeof batch.id !== 'string') return batch;
  const origin = new URL(c.req.url).origin;
  return { ...batch, results_url: `${origin}${BATCHES}/${encodeURIComponent(batch.id)}/results` };
}

/**
 * Every request is checked as a `/v1/messages` body would be (the error names its index); the
 * reservation is what the batch could cost at most on the output side: max_tokens at the batch price.
 */
async function checkBatch(
  body: Buffer,
  maxPdfPages: number,
  policy: ModelPolicy | null,
): Promise<{ count: number; reserveCents: number; files: string[] }> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new GatewayError(
      'invalid_request_error',
      `Request body is not valid JSON: ${(err as Error).message}`,
    );
  }
  const requests = (parsed as { requests?: unknown } | null)?.requests;
  if (!Array.isArray(requests) || requests.length === 0)
    throw new GatewayError(
      'invalid_request_error',
      'requests: a non-empty list of {custom_id, params} is required.',
    );
  let reserveCents = 0;
  const seen = new Set<string>();
  for (const [i, r] of requests.entries()) {
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
      await validateMessagesBody(Buffer.from(JSON.stringify(params ?? null)), { maxPdfPages });
    } catch (err) {
      if (err instanceof GatewayError)
        throw new GatewayError('invalid_request_error', `requests[${i}].params: ${err.message}`);
      throw err;
    }
    const p = params as { model: string; max_tokens: number };
    // The key's model policy holds for each request, as for a single call.
    const refused = policy?.check(p.model, p.max_tokens);
    if (refused) throw new GatewayError('invalid_request_error', `requests[${i}].params.${refused}`);
    reserveCents += callCost(
      p.model,
      { ...NO_TOKENS, output_tokens: p.max_tokens },
      { at: new Date(), batch: true },
    ).cents;
  }
  return { count: requests.length, reserveCents, files: fileRefs(parsed) };
}
