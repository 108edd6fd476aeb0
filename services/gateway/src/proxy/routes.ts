import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono, type Context } from 'hono';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { AppEnv } from '../app-env';
import { keyAuth } from '../auth/middleware';
import type { KeyResolver, Principal } from '../auth/resolver';
import { GatewayError, knownError } from '../lib/errors';
import { answeredRecord, clientClosedRecord, refusedRecord } from '../lib/call-record';
import { ClientGoneError, readBody } from '../pipeline/proxied-body';
import {
  forward,
  type ForwardCall,
  type ForwardDeps,
  type UpstreamAttempt,
  type UpstreamTarget,
} from './forward';
import { resumeStream } from './resume';
import { sendError, shutdownError } from './in-flight';
import type { JsonBody } from '../pipeline/json-body';
import { readMessagesBody, type ValidatedBody } from './validate';
import { groupIdOf, newForwardCall } from './forward-call';

export interface ProxyOptions extends ForwardDeps {
  resolver: KeyResolver;
  /** Where live keys go (the provider) and where test keys go (the built-in emulator). */
  upstreams: { live: string; test: UpstreamTarget };
  maxBodyBytes: number;
  maxPdfPages: number;
  /** How long a request body may pause between bytes. */
  bodyIdleMs?: number;
  /** Who may call (admission/): on the headers, then a reservation once the body is validated. */
  admission?: CallAdmission;
  /** An account's own upstreams after its provider key, tried in order (upstreams/directory.ts); none without it. */
  accountUpstreams?: AccountUpstreams | null;
  /**
   * Refuses a messages body that names a file or skill the caller may not use, and sends a call
   * naming files to the upstream they live on (surface/body-check.ts, surface/object-home.ts).
   */
  checkFileRefs?(call: ForwardCall, body: JsonBody, opts: ProxyOptions): Promise<void> | undefined;
}

/** An account's own upstreams as the proxy and the provider surface reach them (upstreams/directory.ts). */
export interface AccountUpstreams {
  chainFor(
    p: Principal,
    family?: 'messages' | 'files' | 'batches',
  ): UpstreamAttempt | null | Promise<UpstreamAttempt | null>;
  /** One upstream of the account alone, by id (where a file or batch made there lives); null once removed. */
  one(accountId: string, id: string): Promise<UpstreamAttempt | null>;
}

/** What the proxy asks admission; a GatewayError refuses the call, null lets it through. */
export interface CallAdmission {
  admit(principal: Principal, endpoint: string): GatewayError | null | Promise<GatewayError | null>;
  /** `headers` receives the rate-limit headers of the key's limits, for the answer. */
  reserve(
    principal: Principal,
    callId: string,
    size: ValidatedBody,
    headers?: Record<string, string>,
  ): GatewayError | null | Promise<GatewayError | null>;
  /** Standing and budgets only (no rate limits): before work billed later, as an agent session's. */
  admitSpend?(principal: Principal): Promise<GatewayError | null>;
  /** The key's model policy on the validated body (model and max_tokens), before anything is held. */
  permit(principal: Principal, body: ValidatedBody): GatewayError | null;
}

const MODEL_ID = /^[\x21-\x7e]{1,256}$/;
const CANONICAL_PATH = {
  messages: '/v1/messages',
  count_tokens: '/v1/messages/count_tokens',
  models: '/v1/models',
} as const;

/** The provider-compatible routes, authenticated by app keys. */
export function proxyRoutes(opts: ProxyOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const auth = keyAuth<AppEnv>(opts.resolver, ['live', 'test']);
  app.post('/v1/messages', auth, (c) => handle(c, 'messages', opts));
  app.post('/v1/messages/count_tokens', auth, (c) => handle(c, 'count_tokens', opts));
  app.get('/v1/models', auth, (c) => handle(c, 'models', opts));
  app.get('/v1/models/:id', auth, (c) => handle(c, 'models', opts));
  app.get('/v1/messages/:id/events', auth, (c) =>
    resumeStream(c, opts.streamEvents ?? null, opts.keepAlive ?? null),
  );
  return app;
}

export type Endpoint = keyof typeof CANONICAL_PATH;

/**
 * A call that reaches the messages pipeline through another API's shape (cloud-fronts/): its body
 * as a Messages body, made once read and before it is validated; a refusal it throws is
 * answered and recorded like any other.
 */
export interface CallFront {
  body(raw: Buffer): Promise<Buffer>;
}

/** `keygate-resumable: true | false` decides for the request; without it, the key's setting does. */
function wantsResume(header: string | string[] | undefined, principal: Principal): boolean {
  if (header === 'true') return true;
  if (header === 'false') return false;
  return principal.key.resumableStreams;
}

async function handle(c: Context<AppEnv>, endpoint: Endpoint, opts: ProxyOptions): Promise<Response> {
  const { incoming: req, outgoing: res } = c.env;
  if (!req || !res) throw new Error('the proxy routes need @hono/node-server bindings');
  const startedAt = c.var.startedAt ?? performance.now();
  return proxyCall(req, res, c.var.principal, c.var.requestId, startedAt, endpoint, c.req.param('id'), opts);
}

/** One call to a provider route, its key already resolved: from the app's routes, or the fast path (fast-path.ts). */
export async function proxyCall(
  req: IncomingMessage,
  res: ServerResponse,
  principal: Principal,
  requestId: string,
  startedAt: number,
  endpoint: Endpoint,
  id: string | undefined,
  opts: ProxyOptions,
  front?: CallFront,
): Promise<Response> {
  const call = newForwardCall({
    req,
    res,
    principal,
    endpoint,
    path: upstreamPath(endpoint, id, req.url),
    requestId,
    startedAt,
    resumable: endpoint === 'messages' && !front && wantsResume(req.headers['keygate-resumable'], principal),
  });
  // Until it goes upstream, a call ended by a shutdown is answered and recorded here.
  let ended = false;
  const leave = opts.inFlight?.add({
    end() {
      ended = true;
      const err = shutdownError();
      if (!res.headersSent) sendError(res, err, call.requestId);
      opts.record(answeredRecord(call, err.status, 'shutdown', { partial: true }));
    },
  });
  try {
    let via =
      opts.accountUpstreams && principal.key.kind !== 'test'
        ? opts.accountUpstreams.chainFor(principal)
        : null;
    if (via instanceof Promise) via = await via;
    call.target = via ? { baseUrl: '', apiKey: '', via } : targetFor(principal, opts);
    call.groupId = groupIdOf(req.headers);
    // On the headers: a call its account or limits refuse costs no body.
    let verdict = opts.admission?.admit(principal, endpoint) ?? null;
    if (verdict instanceof Promise) verdict = await verdict;
    if (verdict) throw verdict;
    if (req.method === 'POST') {
      await readAndAdmit(call, opts, front);
    } else if (endpoint === 'models') {
      call.model = id && MODEL_ID.test(id) ? id : null;
      // Model discovery shows a caller only the models its policy allows.
      if (call.model && principal.policy && !principal.policy.allows(call.model))
        throw new GatewayError('not_found_error', `model: ${call.model} is not available to this key.`);
    }
  } catch (err) {
    if (ended) return RESPONSE_ALREADY_SENT;
    if (err instanceof ClientGoneError) {
      // No one to answer; the attempt still belongs in the call log.
      opts.record(clientClosedRecord(call));
      return RESPONSE_ALREADY_SENT;
    }
    // A refusal, or a lookup the database could not answer (an outage: the retryable 503),
    // is answered and recorded like any refusal; anything else is ours.
    const refusal = knownError(err);
    if (!refusal) throw err;
    opts.record(refusedRecord(call, refusal));
    if (!req.complete && !res.headersSent) {
      answerUnread(req, res, refusal, call.requestId);
      return RESPONSE_ALREADY_SENT;
    }
    throw refusal;
  } finally {
    leave?.();
  }
  if (ended) return RESPONSE_ALREADY_SENT;
  await forward(call, opts);
  return RESPONSE_ALREADY_SENT;
}

/**
 * Reads a messages (or count_tokens) body and admits the call on it: the model policy, the file
 * references, the holds. The parsed body ends with this function: a stream can last minutes,
 * and what the call keeps while it runs is its bytes (until the answer starts), never the parse.
 */
async function readAndAdmit(call: ForwardCall, opts: ProxyOptions, front?: CallFront): Promise<void> {
  const { principal, endpoint } = call;
  call.body = await readBody(call.req, { limit: opts.maxBodyBytes, idleMs: opts.bodyIdleMs ?? 30_000 });
  if (front) call.body = await front.body(call.body);
  const { size: body, json } = await readMessagesBody(
    call.body,
    opts,
    endpoint === 'messages' ? 'messages' : 'count_tokens',
  );
  call.model = body.model;
  call.stream = body.stream;
  if (principal.policy !== null && opts.admission) {
    const refused = opts.admission.permit(principal, body);
    if (refused) throw refused;
  }
  const refs = opts.checkFileRefs?.(call, json, opts);
  if (refs) await refs;
  if (endpoint === 'messages' && opts.admission) {
    const limits: Record<string, string> = {};
    let verdict = opts.admission.reserve(principal, call.requestId, body, limits);
    if (verdict instanceof Promise) verdict = await verdict;
    if (verdict) throw verdict;
    if (Object.keys(limits).length > 0) call.limitHeaders = limits;
  }
}

/**
 * Answers a call refused before its body was read (too large, stalled). Node closes such a
 * connection right after the answer, and closing with request bytes still arriving resets it:
 * a client still sending may then lose the answer. So the rest of the body is read and
 * dropped, and the close waits for the client (at most 2 s) after the answer is written.
 */
function answerUnread(req: IncomingMessage, res: ServerResponse, err: GatewayError, requestId: string): void {
  const socket = req.socket;
  socket.destroySoon = function lingerThenClose() {
    this.end();
    const linger = setTimeout(() => this.destroy(), 2_000);
    linger.unref();
    this.once('close', () => clearTimeout(linger));
  };
  res.setHeader('connection', 'close');
  sendError(res, err, requestId);
  req.resume();
}

export function targetFor(p: Principal, opts: ProxyOptions): UpstreamTarget {
  if (p.key.kind === 'test') return opts.upstreams.test;
  if (!p.providerKey) {
    throw new GatewayError(
      'permission_error',
      'This account has no provider key yet: an operator sets it with `keygate account set-provider-key`.',
    );
  }
  return { baseUrl: opts.upstreams.live, apiKey: p.providerKey };
}

/**
 * The path sent upstream is rebuilt from the route that matched, never copied from the
 * request line: a path Hono normalised (dot segments, encoded slashes, an absolute-form
 * target) must not reach the provider with the account's key as anything but this route.
 */
function upstreamPath(endpoint: Endpoint, id: string | undefined, url: string | undefined): string {
  const path =
    id === undefined ? CANONICAL_PATH[endpoint] : `${CANONICAL_PATH[endpoint]}/${encodeURIComponent(id)}`;
  const q = url?.indexOf('?') ?? -1;
  return q === -1 ? path : path + url!.slice(q);
}
