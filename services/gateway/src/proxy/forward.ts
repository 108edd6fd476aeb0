import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { request, type Dispatcher } from 'undici';
import type { Principal } from '../auth/resolver';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { CallRecord } from '../usage/record';
import { clientHeaders, upstreamHeaders } from './headers';
import { JsonUsageTap, SseUsageTap } from './usage-tap';

export interface UpstreamTarget {
  baseUrl: string;
  /** The credential the upstream takes as x-api-key. */
  apiKey: string;
}

export interface ForwardDeps {
  dispatcher: Dispatcher;
  timeoutMs: number;
  record(call: CallRecord): void;
  logger: Logger;
}

export interface ForwardCall {
  req: IncomingMessage;
  res: ServerResponse;
  principal: Principal;
  target: UpstreamTarget;
  endpoint: 'messages' | 'count_tokens' | 'models';
  path: string;
  body: Buffer | null;
  model: string | null;
  stream: boolean;
  requestId: string;
  groupId: string | null;
  retryCount: number;
  startedAt: number;
  createdAt: Date;
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * Sends one call upstream and streams the answer back as it arrives, with Node streams end
 * to end (the WHATWG stream path costs more than half the throughput, see performance.md).
 * A tap reads usage on the way; the call is recorded however it ends.
 */
export async function forward(call: ForwardCall, deps: ForwardDeps): Promise<void> {
  const { req, res } = call;
  const abort = new AbortController();
  let clientGone = false;
  res.once('close', () => {
    if (res.writableFinished) return;
    clientGone = true;
    abort.abort();
  });

  const outcome: Outcome = { status: 0, errorType: null, partial: false, ttfbMs: null, upstreamRequestId: null, tap: null };
  try {
    let upstream: Dispatcher.ResponseData;
    try {
      upstream = await request(call.target.baseUrl + call.path, {
        method: req.method as Dispatcher.HttpMethod,
        headers: upstreamHeaders(req.headers, call.target.apiKey, call.body?.length ?? null),
        body: call.body,
        dispatcher: deps.dispatcher,
        signal: abort.signal,
        headersTimeout: deps.timeoutMs,
        bodyTimeout: deps.timeoutMs,
      });
    } catch (err) {
      if (clientGone) {
        Object.assign(outcome, { status: 499, errorType: 'client_closed', partial: true });
        return;
      }
      const failure = upstreamFailure(err, deps.timeoutMs);
      Object.assign(outcome, { status: failure.status, errorType: failure.type });
      if (failure.type === 'api_error') deps.logger.warn('upstream unreachable', { requestId: call.requestId, code: codeOf(err) });
      throw failure;
    }

    outcome.status = upstream.statusCode;
    outcome.upstreamRequestId = headerValue(upstream.headers['request-id']);
    const sse = upstream.statusCode === 200 && String(upstream.headers['content-type'] ?? '').startsWith('text/event-stream');
    const tap = (outcome.tap = sse ? new SseUsageTap() : new JsonUsageTap());
    res.writeHead(upstream.statusCode, clientHeaders(upstream.headers, call.requestId));
    if (sse) res.flushHeaders();
    upstream.body.on('data', (chunk: Buffer) => {
      outcome.ttfbMs ??= performance.now() - call.startedAt;
      tap.write(chunk);
    });
    try {
      await pipeline(upstream.body, res);
    } catch (err) {
      outcome.partial = true;
      if (clientGone) outcome.errorType = 'client_closed';
      else outcome.errorType = codeOf(err) === 'UND_ERR_BODY_TIMEOUT' ? 'timeout_error' : 'api_error';
      if (!clientGone) deps.logger.warn('upstream stream broke', { requestId: call.requestId, code: codeOf(err) });
    }
    tap.end();
    outcome.errorType = tap.errorType ?? outcome.errorType;
    if (sse && !tap.complete) outcome.partial = true;
  } finally {
    deps.record(toRecord(call, outcome));
  }
}

interface Outcome {
  status: number;
  errorType: string | null;
  partial: boolean;
  ttfbMs: number | null;
  upstreamRequestId: string | null;
  tap: SseUsageTap | JsonUsageTap | null;
}

function toRecord(call: ForwardCall, o: Outcome): CallRecord {
  return callRecord(call, {
    model: o.tap?.model ?? call.model,
    status: o.status,
    errorType: o.errorType,
    usage: o.tap?.usage ?? null,
    upstreamMessageId: o.tap?.messageId ?? null,
    upstreamRequestId: o.upstreamRequestId,
    ttfbMs: o.ttfbMs,
    partial: o.partial,
  });
}

type Result = Pick<CallRecord, 'model' | 'status' | 'errorType' | 'usage' | 'upstreamMessageId' | 'upstreamRequestId' | 'ttfbMs' | 'partial'>;

/** The call log entry for a call and how it ended. */
export function callRecord(call: Omit<ForwardCall, 'target' | 'req' | 'res'>, result: Result): CallRecord {
  const { key } = call.principal;
  return {
    id: call.requestId,
    accountId: key.accountId,
    keyId: key.id,
    memberId: key.memberId,
    app: key.app,
    environment: key.environment,
    groupId: call.groupId,
    endpoint: call.endpoint,
    stream: call.stream,
    retryCount: call.retryCount,
    latencyMs: performance.now() - call.startedAt,
    createdAt: call.createdAt,
    ...result,
  };
}

function codeOf(err: unknown): string | undefined {
  const e = err as { code?: string; cause?: { code?: string } };
  return e?.code ?? e?.cause?.code;
}

function upstreamFailure(err: unknown, timeoutMs: number): GatewayError {
  const code = codeOf(err);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new GatewayError('timeout_error', `The provider did not answer within ${Math.round(timeoutMs / 1000)} s.`);
  }
  const reason = code && UNREACHABLE.has(code) ? code : 'connection failed';
  return new GatewayError('api_error', `Could not reach the provider (${reason}). The request was not processed; it is safe to retry.`, {
    status: 502,
    headers: { 'x-should-retry': 'true' },
  });
}

function headerValue(v: string | string[] | undefined): string | null {
  return (Array.isArray(v) ? v[0] : v) ?? null;
}
