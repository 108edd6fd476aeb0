import type { Context } from 'hono';
import { performance } from 'node:perf_hooks';
import type { AppEnv } from '../app-env';
import type { Principal } from '../auth/resolver';
import { clientClosedRecord, refusedRecord } from '../lib/call-record';
import { GatewayError } from '../lib/errors';
import { ClientGoneError } from '../pipeline/body-reader';
import type { ForwardCall } from '../proxy/forward';
import { familyOf } from '../upstreams/kinds';
import { groupIdOf, newForwardCall } from '../proxy/forward-call';
import { targetFor, type ProxyOptions } from '../proxy/routes';

/**
 * A call to one of the provider's other endpoints (files, batches, skills, sessions, the open
 * passthrough), shaped like a messages call so it travels the same forwarder and call log.
 * `endpoint` is the method and path template (`GET /v1/files/{id}`).
 */
export function surfaceCall(
  c: Context<AppEnv>,
  opts: ProxyOptions,
  endpoint: string,
  path: string,
): ForwardCall {
  const { incoming: req, outgoing: res } = c.env;
  if (!req || !res) throw new Error('the provider surface routes need @hono/node-server bindings');
  const q = req.url?.indexOf('?') ?? -1;
  const length = Number.parseInt(String(req.headers['content-length'] ?? ''), 10);
  const call = newForwardCall({
    req,
    res,
    principal: c.var.principal,
    endpoint,
    path: q === -1 ? path : path + req.url!.slice(q),
    requestId: c.var.requestId,
    startedAt: performance.now(),
    upload: hasBody(req.method, req.headers)
      ? { stream: req, length: Number.isNaN(length) ? null : length }
      : null,
  });
  try {
    // Files and batches of an account with upstreams are routed by viaUpstreams, after admission.
    if (!routed(call, opts)) call.target = targetFor(call.principal, opts);
    call.groupId = groupIdOf(req.headers);
  } catch (err) {
    if (err instanceof GatewayError) opts.record(refusedRecord(call, err));
    throw err;
  }
  return call;
}

function hasBody(
  method: string | undefined,
  headers: Record<string, string | string[] | undefined>,
): boolean {
  if (method === 'GET' || method === 'HEAD') return false;
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
}

/**
 * The method and path template of a call for the call log: segments that carry an id (a digit,
 * or longer than 40 characters) read `{id}`, so one endpoint is one row in the reports.
 */
export function pathTemplate(method: string, path: string): string {
  const segments = path.split('/').map((s, i) => (i > 1 && (/\d/.test(s) || s.length > 40) ? '{id}' : s));
  return `${method} ${segments.join('/')}`.slice(0, 200);
}

/** A path segment decoded for checks; undecodable input stays as it is. */
export function decoded(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/**
 * Files and batches go to the first of the account's upstreams that serves them (upstreams/kinds.ts),
 * failing over as messages do; an account without upstreams keeps its provider key.
 */
export async function viaUpstreams(call: ForwardCall, opts: ProxyOptions): Promise<void> {
  const family = routed(call, opts);
  if (!family) return;
  const via = await opts.accountUpstreams!.chainFor(call.principal, family);
  call.target = via ? { baseUrl: '', apiKey: '', via } : targetFor(call.principal, opts);
}

const routed = (call: ForwardCall, opts: ProxyOptions) =>
  opts.accountUpstreams && call.principal.key.kind !== 'test' ? familyOf(call.endpoint) : null;

/** Admission on the headers (billing standing, rate limits, budgets): throws the refusal. */
export async function admitOrThrow(
  proxy: ProxyOptions,
  principal: Principal,
  endpoint: string,
): Promise<void> {
  let verdict = proxy.admission?.admit(principal, endpoint) ?? null;
  if (verdict instanceof Promise) verdict = await verdict;
  if (verdict) throw verdict;
}

/** A client gone before its body arrived has no one to answer: the attempt is recorded as the messages route records it. */
export function recordGone(call: ForwardCall, opts: Pick<ProxyOptions, 'record'>, err: unknown): boolean {
  if (!(err instanceof ClientGoneError)) return false;
  opts.record(clientClosedRecord(call));
  return true;
}
