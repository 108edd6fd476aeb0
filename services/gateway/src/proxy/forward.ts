import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { Principal } from '../auth/resolver';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { CallRecord } from '../lib/call-record';
import { clientHeaders, upstreamHeaders } from './headers';
import { errorEvent, sendError, shutdownError, type Endable, type InFlightCalls } from './in-flight';
import { JsonUsageTap, settleUsage, SseUsageTap } from '@keygate/protocol';

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
  /**
   * Sees the status of each upstream answer; an error it returns is sent instead of that
   * answer (the refused provider key: see provider-key-check.ts).
   */
  onUpstreamStatus?(call: ForwardCall, status: number): GatewayError | null;
  /** Where calls in flight are tracked, so a shutdown can end them. */
  inFlight?: InFlightCalls;
}

export interface ForwardCall {
  req: IncomingMessage;
  res: ServerResponse;
  principal: Principal;
  target: UpstreamTarget;
  /** 'messages', 'count_tokens', 'models', or the method and path template of another call. */
  endpoint: string;
  path: string;
  body: Buffer | null;
  /** A body streamed upstream as it arrives instead of `body` (files, the open passthrough). */
  upload?: { stream: Readable; length: number | null } | null;
  agentId?: string | null;
  parentAgentId?: string | null;
  model: string | null;
  stream: boolean;
  requestId: string;
  groupId: string | null;
  client: string | null;
  retryCount: number;
  startedAt: number;
  createdAt: Date;
}

const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * Sends one call upstream and streams the answer back as it arrives. The answer goes from
 * undici's dispatch handler straight to the client's socket: no intermediate Readable, no
 * stream.pipeline and no AbortController, which together cost a quarter of the proxy's CPU
 * per request (bench/profile.ts). A tap reads usage on the way; the call is recorded however
 * it ends. Resolves once the answer is sent (or the client left); rejects with the
 * provider-shaped error when the upstream could not answer at all.
 */
export function forward(call: ForwardCall, deps: ForwardDeps): Promise<void> {
  return new Promise((resolve, reject) => {
    const exchange = new Exchange(call, deps, resolve, reject);
    const url = call.target.baseUrl;
    deps.dispatcher.dispatch(
      {
        origin: url,
        path: call.path,
        method: call.req.method as Dispatcher.HttpMethod,
        headers: upstreamHeaders(
          call.req.headers,
          call.target.apiKey,
          call.body?.length ?? call.upload?.length ?? null,
        ),
        body: call.upload?.stream ?? call.body,
        headersTimeout: deps.timeoutMs,
        bodyTimeout: deps.timeoutMs,
      },
      exchange,
    );
  });
}

/** One call in flight: undici's handler for the upstream answer, writing it to the client. */
class Exchange implements Dispatcher.DispatchHandler, Endable {
  readonly #call: ForwardCall;
  readonly #deps: ForwardDeps;
  readonly #resolve: () => void;
  readonly #reject: (err: Error) => void;
  #controller: Dispatcher.DispatchController | null = null;
  #clientGone = false;
  #status = 0;
  #errorType: string | null = null;
  #partial = false;
  #ttfbMs: number | null = null;
  #bytes = 0;
  #upstreamRequestId: string | null = null;
  #tap: SseUsageTap | JsonUsageTap | null = null;
  #replaced = false;
  #done = false;
  #shutdown = false;
  readonly #leave: (() => void) | undefined;

  constructor(call: ForwardCall, deps: ForwardDeps, resolve: () => void, reject: (err: Error) => void) {
    this.#call = call;
    this.#deps = deps;
    this.#resolve = resolve;
    this.#reject = reject;
    // The client may have left while the body was checked or limits awaited.
    this.#clientGone = call.res.destroyed;
    call.res.once('close', this.#onClientClose);
    this.#leave = deps.inFlight?.add(this);
  }

  /**
   * The gateway is shutting down and this call outlasted the grace: a stream gets an `error`
   * event, an answer not started yet a 529 (both overloaded_error), and the upstream is aborted.
   * undici then reports the abort to onResponseError, which records the call.
   */
  end(): void {
    if (this.#done || this.#shutdown) return;
    this.#shutdown = true;
    const { res, requestId } = this.#call;
    const err = shutdownError();
    if (!res.headersSent) {
      this.#status = err.status;
      sendError(res, err, requestId);
    } else if (this.#tap instanceof SseUsageTap) {
      res.end(errorEvent(err, requestId));
    } else {
      // A JSON answer half sent cannot carry an error any more.
      res.destroy();
    }
    this.#controller?.abort(new Error('the gateway is shutting down'));
  }

  readonly #onClientClose = (): void => {
    if (this.#call.res.writableFinished) return;
    this.#clientGone = true;
    this.#controller?.abort(new Error('client closed the connection'));
  };

  readonly #onDrain = (): void => {
    this.#controller?.resume();
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#shutdown) controller.abort(new Error('the gateway is shutting down'));
    else if (this.#clientGone) controller.abort(new Error('client closed the connection'));
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    // Informational answers (1xx) come here too; the final one follows.
    if (statusCode < 200 || this.#shutdown) return;
    // undici keeps the raw header buffers on the controller for the whole response: about 4 KB
    // per open stream that nothing here reads again (heap snapshot with 1,000 streams open).
    controller.rawHeaders = null;
    const { res, requestId } = this.#call;
    this.#status = statusCode;
    const rid = headers['request-id'];
    this.#upstreamRequestId = (Array.isArray(rid) ? rid[0] : rid) ?? null;
    const replacement = this.#deps.onUpstreamStatus?.(this.#call, statusCode);
    if (replacement) return this.#replace(replacement);
    const sse = statusCode === 200 && String(headers['content-type'] ?? '').startsWith('text/event-stream');
    res.writeHead(statusCode, clientHeaders(headers, requestId));
    this.#tap = sse ? new SseUsageTap() : new JsonUsageTap();
    if (sse) res.flushHeaders();
  }

  /** Answers with our own error; the upstream body is read to its end and dropped. */
  #replace(err: GatewayError): void {
    this.#replaced = true;
    this.#status = err.status;
    this.#errorType = err.type;
    this.#tap = new JsonUsageTap();
    sendError(this.#call.res, err, this.#call.requestId);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#replaced || this.#shutdown) return;
    this.#ttfbMs ??= performance.now() - this.#call.startedAt;
    this.#bytes += chunk.length;
    this.#tap!.write(chunk);
    if (!this.#call.res.write(chunk)) {
      controller.pause();
      this.#call.res.once('drain', this.#onDrain);
    }
  }

  onResponseEnd(): void {
    this.#call.res.end();
    this.#finish();
    this.#resolve();
  }

  onResponseError(_c: Dispatcher.DispatchController | null, err: Error): void {
    const { res, requestId } = this.#call;
    const { logger, timeoutMs } = this.#deps;
    if (this.#shutdown) {
      // Answered by end(); recorded as partial, with the usage of what was forwarded.
      this.#partial = true;
      this.#finish();
      return this.#resolve();
    }
    if (this.#tap === null) {
      // Nothing was sent to the client yet.
      if (this.#clientGone) {
        this.#status = 499;
        this.#errorType = 'client_closed';
        this.#partial = true;
        this.#finish();
        return this.#resolve();
      }
      const failure = upstreamFailure(err, timeoutMs);
      this.#status = failure.status;
      this.#errorType = failure.type;
      if (failure.type === 'api_error') logger.warn('upstream unreachable', { requestId, code: codeOf(err) });
      this.#finish();
      return this.#reject(failure);
    }
    this.#partial = true;
    if (this.#clientGone) {
      this.#errorType = 'client_closed';
    } else {
      this.#errorType = codeOf(err) === 'UND_ERR_BODY_TIMEOUT' ? 'timeout_error' : 'api_error';
      logger.warn('upstream stream broke', { requestId, code: codeOf(err) });
      res.destroy();
    }
    this.#finish();
    this.#resolve();
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    this.#leave?.();
    const call = this.#call;
    call.res.off('close', this.#onClientClose);
    const tap = this.#tap;
    if (tap) {
      tap.end();
      this.#errorType = tap.errorType ?? this.#errorType;
      if (tap instanceof SseUsageTap && !tap.complete) this.#partial = true;
    }
    if (this.#shutdown) this.#errorType = 'shutdown';
    // A stream that ended before the provider's final count gets the estimate from its content.
    const { usage, estimated } = tap ? settleUsage(tap) : { usage: null, estimated: false };
    this.#deps.record(
      callRecord(call, {
        model: tap?.model ?? call.model,
        status: this.#status,
        errorType: this.#errorType,
        usage,
        estimated,
        upstreamMessageId: tap?.messageId ?? null,
        upstreamRequestId: this.#upstreamRequestId,
        ttfbMs: this.#ttfbMs,
        partial: this.#partial,
        requestBytes: call.body?.length ?? call.upload?.length ?? null,
        responseBytes: this.#bytes,
      }),
    );
  }
}

type Result = Pick<
  CallRecord,
  | 'model'
  | 'status'
  | 'errorType'
  | 'usage'
  | 'estimated'
  | 'upstreamMessageId'
  | 'upstreamRequestId'
  | 'ttfbMs'
  | 'partial'
> &
  Partial<Pick<CallRecord, 'requestBytes' | 'responseBytes'>>;

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
    client: call.client,
    endpoint: call.endpoint,
    stream: call.stream,
    retryCount: call.retryCount,
    latencyMs: performance.now() - call.startedAt,
    createdAt: call.createdAt,
    agentId: call.agentId ?? null,
    parentAgentId: call.parentAgentId ?? null,
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
    return new GatewayError(
      'timeout_error',
      `The provider did not answer within ${Math.round(timeoutMs / 1000)} s.`,
    );
  }
  const reason = code && UNREACHABLE.has(code) ? code : 'connection failed';
  return new GatewayError(
    'api_error',
    `Could not reach the provider (${reason}). The request was not processed; it is safe to retry.`,
    {
      status: 502,
      headers: { 'x-should-retry': 'true' },
    },
  );
}
