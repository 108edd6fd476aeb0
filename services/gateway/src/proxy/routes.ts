import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono, type Context } from 'hono';
import { performance } from 'node:perf_hooks';
import type { AppEnv } from '../app-env';
import { keyAuth } from '../auth/middleware';
import type { KeyResolver, Principal } from '../auth/resolver';
import { GatewayError } from '../lib/errors';
import type { CallRecord } from '../usage/record';
import { readBody } from './body';
import { callRecord, forward, type ForwardCall, type ForwardDeps, type UpstreamTarget } from './forward';
import { validateMessagesBody } from './validate';

export interface ProxyOptions extends ForwardDeps {
  resolver: KeyResolver;
  /** Where live keys go (the provider) and where test keys go (the built-in emulator). */
  upstreams: { live: string; test: UpstreamTarget };
  maxBodyBytes: number;
  maxPdfPages: number;
  /** Admission checks (rate limits, spend caps) after the body is validated; throws to refuse. */
  admit?(principal: Principal, call: Readonly<ForwardCall>): void | Promise<void>;
}

const GROUP_ID = /^[\x21-\x7e]{1,128}$/;

/** The provider-compatible routes, authenticated by app keys. */
export function proxyRoutes(opts: ProxyOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const auth = keyAuth(opts.resolver, ['live', 'test']);
  app.post('/v1/messages', auth, (c) => handle(c, 'messages', opts));
  app.post('/v1/messages/count_tokens', auth, (c) => handle(c, 'count_tokens', opts));
  app.get('/v1/models', auth, (c) => handle(c, 'models', opts));
  app.get('/v1/models/:id', auth, (c) => handle(c, 'models', opts));
  return app;
}

async function handle(c: Context<AppEnv>, endpoint: ForwardCall['endpoint'], opts: ProxyOptions): Promise<Response> {
  const { incoming: req, outgoing: res } = c.env;
  if (!req || !res) throw new Error('the proxy routes need @hono/node-server bindings');
  const principal = c.var.principal;
  const startedAt = performance.now();
  const call: ForwardCall = {
    req,
    res,
    principal,
    target: { baseUrl: '', apiKey: '' },
    endpoint,
    path: req.url ?? c.req.path,
    body: null,
    model: null,
    stream: false,
    requestId: c.var.requestId,
    groupId: null,
    retryCount: Number.parseInt(String(req.headers['x-stainless-retry-count'] ?? '0'), 10) || 0,
    startedAt,
    createdAt: new Date(),
  };
  try {
    call.target = targetFor(principal, opts);
    call.groupId = groupIdOf(req.headers);
    if (req.method === 'POST') {
      call.body = await readBody(req, opts.maxBodyBytes);
      const body = await validateMessagesBody(call.body, opts, endpoint === 'messages' ? 'messages' : 'count_tokens');
      call.model = body.model;
      call.stream = body.stream;
    } else if (endpoint === 'models') {
      call.model = c.req.param('id') ?? null;
    }
    await opts.admit?.(principal, call);
  } catch (err) {
    if (err instanceof GatewayError) opts.record(rejected(call, err));
    throw err;
  }
  await forward(call, opts);
  return RESPONSE_ALREADY_SENT;
}

function targetFor(p: Principal, opts: ProxyOptions): UpstreamTarget {
  if (p.key.kind === 'test') return opts.upstreams.test;
  if (!p.providerKey) {
    throw new GatewayError('permission_error', 'This account has no provider key yet: an operator sets it with `keygate account set-provider-key`.');
  }
  return { baseUrl: opts.upstreams.live, apiKey: p.providerKey };
}

function groupIdOf(headers: Record<string, string | string[] | undefined>): string | null {
  const raw = headers['keygate-group-id'] ?? headers['x-claude-code-session-id'];
  if (raw === undefined) return null;
  const id = Array.isArray(raw) ? raw[0] : raw;
  if (!id || !GROUP_ID.test(id)) {
    throw new GatewayError('invalid_request_error', 'keygate-group-id: must be 1 to 128 visible ASCII characters.');
  }
  return id;
}

/** A call refused before it went upstream is still a call: it is recorded with its error. */
function rejected(call: ForwardCall, err: GatewayError): CallRecord {
  return callRecord(call, {
    model: call.model, status: err.status, errorType: err.type, usage: null, upstreamMessageId: null,
    upstreamRequestId: null, ttfbMs: null, partial: false,
  });
}
