import { Hono, type Context } from 'hono';
import type { AppEnv } from '../app-env';
import { keyAuth } from '../auth/middleware';
import { GatewayError } from '../lib/errors';
import type { ModelPolicy } from '../lib/model-policy';
import type { ForwardCall } from '../proxy/forward';
import type { ProxyOptions } from '../proxy/routes';
import { exchange, relay, type Answer } from './exchange';
import { run } from './files-routes';

/**
 * Model discovery as Claude Code asks for it (`GET /v1/models?limit=1000`, a 3-second budget,
 * redirects treated as failure: https://code.claude.com/docs/en/llm-gateway-protocol, read
 * 2026-11-25): the provider's list, cached per account and query, asked for with a budget
 * below the client's, and the last good list served when the provider is slow or failing.
 */
export interface ModelsCacheOptions {
  /** How long a list is served without asking the provider again. Default 60 s. */
  ttlMs?: number;
  /** How long the provider may take before the cached list (if any) answers. Default 2,500 ms. */
  budgetMs?: number;
  clock?: () => number;
}

interface Entry {
  answer: Answer;
  at: number;
}

const MAX_ENTRIES = 10_000;

export function modelsRoutes(proxy: ProxyOptions, opts: ModelsCacheOptions = {}): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const cache = new Map<string, Entry>();
  const ttl = opts.ttlMs ?? 60_000;
  const budget = opts.budgetMs ?? 2_500;
  const now = opts.clock ?? Date.now;
  async function list(call: ForwardCall, _d: unknown, c: Context<AppEnv>): Promise<void> {
    const { key } = call.principal;
    const id = `${key.accountId}\n${key.kind}\n${new URL(c.req.url).search}`;
    const hit = cache.get(id);
    const policy = call.principal.policy;
    const shown = (a: Answer) => (policy && a.status === 200 ? onlyAllowed(a.body, policy) : a.body);
    const cached = (e: Entry) => relay(call, proxy, e.answer, shown(e.answer), { upstreamRequestId: null });
    if (hit && now() - hit.at < ttl) return cached(hit);
    let answer: Answer | null = null;
    let failure: unknown = null;
    try {
      answer = await exchange(call, { ...proxy, timeoutMs: budget }, null, null);
    } catch (err) {
      failure = err;
    }
    if (answer && answer.status === 200) {
      if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!);
      cache.set(id, { answer, at: now() });
      return relay(call, proxy, answer, shown(answer));
    }
    // Slow, failing, or answering with a redirect: the last good list, if there is one.
    if (hit) return cached(hit);
    if (answer && (answer.status < 300 || answer.status >= 400)) return relay(call, proxy, answer);
    if (failure) throw failure;
    throw new GatewayError('api_error', 'The provider answered the model list with a redirect.', {
      status: 502,
    });
  }

  app.get('/v1/models', keyAuth(proxy.resolver, ['live', 'test']), (c) =>
    run(c, { proxy }, 'models', '/v1/models', list),
  );
  return app;
}

/**
 * The provider's model list cut to the models the caller's policy allows, with `first_id` and
 * `last_id` following the page (the provider's list shape:
 * https://docs.claude.com/en/api/models-list, read 2026-11-25). A body that is not a list passes.
 */
function onlyAllowed(body: Buffer, policy: ModelPolicy): Buffer {
  let list: { data?: unknown; first_id?: unknown; last_id?: unknown };
  try {
    list = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  if (!Array.isArray(list.data)) return body;
  const data = list.data.filter((m: { id?: unknown }) => typeof m?.id === 'string' && policy.allows(m.id));
  const first = data[0] as { id: string } | undefined;
  const last = data[data.length - 1] as { id: string } | undefined;
  return Buffer.from(
    JSON.stringify({ ...list, data, first_id: first?.id ?? null, last_id: last?.id ?? null }),
  );
}
