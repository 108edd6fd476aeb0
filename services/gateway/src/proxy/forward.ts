import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { Principal } from '../auth/resolver';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import { callRecord, type CallRecord } from '../lib/call-record';
import type { KeptStream, StreamEvents } from '../streams/events';
import { JsonUsageTap, settleUsage, SseFramer, SseUsageTap } from '@keygate/protocol';
import { codeOf, readTimeout, unreachable, upstreamFailure } from './call-result';
import { clientHeaders } from './headers';
import { upstreamRequest, type BuiltRequest } from './upstream-request';
import { errorEvent, sendError, shutdownError, type Endable, type InFlightCalls } from './in-flight';
import { KEEP_ALIVE_LINE, type QuietStream, type SseKeepAlive } from './keep-alive';

export interface UpstreamTarget {
  baseUrl: string;
  /** The credential the upstream takes as x-api-key. */
  apiKey: string;
  /** An account with upstreams of its own (upstreams/): the first to try, in place of the two above. */
  via?: UpstreamAttempt | null;
}

/** What one upstream is sent for a call. */
export interface UpstreamRequest extends BuiltRequest {
  /** The model id was rewritten for this upstream: the call is recorded (and priced) under the client's. */
  mapped: boolean;
  /** A credential made for this call (a minted access token), for `refused` to drop. */
  token?: string;
}

/**
 * What an upstream's request is built from: a call's headers, method, path and body (a
 * ForwardCall is one; so is a request Keygate makes on its own, as the batch follower's).
 */
export interface OutgoingCall {
  req: { headers: IncomingHttpHeaders; method?: string | undefined };
  path: string;
  body: Buffer | null;
  upload?: ForwardCall['upload'];
  model: string | null;
}

/** One upstream of a call, and the next to try if it fails before its first byte reaches the client. */
export interface UpstreamAttempt {
  /** Recorded as the call's upstream. */
  label: string;
  /** The account's provider key itself: its refusals mark the key (provider-key-check.ts). */
  providerKey: boolean;
  origin: string;
  dispatcher: Dispatcher;
  request(call: OutgoingCall): UpstreamRequest | Promise<UpstreamRequest>;
  next: UpstreamAttempt | null;
  /**
   * The upstream answered 401 to this request: the same upstream to try once more with a fresh
   * credential (a minted token it no longer takes), or null.
   */
  refused?(out: UpstreamRequest): UpstreamAttempt | null;
}

/** Answers another upstream may not give: overloaded (529) and server errors. */
const failsOver = (status: number) => status >= 500;

export interface ForwardDeps {
  dispatcher: Dispatcher;
  /** No answer, or no byte mid-answer, from the upstream for this long ends the call (read timeout). */
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
  /** Comment lines for streams silent long enough for a client to give up; none without it. */
  keepAlive?: SseKeepAlive | null;
  /** Where resumable calls keep their events; without it no call is resumable. */
  streamEvents?: StreamEvents | null;
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
  /** The client asked for a stream it can pick up again (`keygate-resumable: true`). */
  resumable: boolean;
  requestId: string;
  groupId: string | null;
  client: string | null;
  retryCount: number;
  startedAt: number;
  createdAt: Date;
  /** The key's own `anthropic-ratelimit-*` headers, answered instead of the provider's (which describe the account's provider key). */
  limitHeaders?: Record<string, string>;
}

/**
 * Sends one call upstream and streams the answer back as it arrives. The answer goes from
 * undici's dispatch handler straight to the client's socket: no intermediate Readable, no
 * stream.pipeline and no AbortController, which together cost a quarter of the proxy's CPU
 * per request (bench/profile.ts). A tap reads usage on the way; the call is recorded however
 * it ends. Resolves once the answer is sent (or the client left); rejects with the
 * provider-shaped error when the upstream could not answer at all.
 */
export function forward(call: ForwardCall, deps: ForwardDeps): Promise<void> {
  return new Promise((resolve, reject) => send(call, deps, call.target.via ?? null, resolve, reject));
}

function send(
  call: ForwardCall,
  deps: ForwardDeps,
  attempt: UpstreamAttempt | null,
  resolve: () => void,
  reject: (err: Error) => void,
): void {
  if (attempt) {
    const out = attempt.request(call);
    if (!(out instanceof Promise)) return dispatchTo(call, deps, attempt, out, resolve, reject);
    // A credential made on demand (a Google access token): its failure is this upstream's failure.
    out.then(
      (ready) => dispatchTo(call, deps, attempt, ready, resolve, reject),
      (err: Error) =>
        new Exchange(call, deps, resolve, reject, attempt, null).onResponseError(null, notSent(attempt, err)),
    );
    return;
  }
  const out = upstreamRequest(
    call.req.headers,
    call.path,
    call.body,
    call.body?.length ?? call.upload?.length ?? null,
    { auth: 'x-api-key', credential: call.target.apiKey },
  );
  dispatch(
    call,
    deps,
    deps.dispatcher,
    call.target.baseUrl,
    out,
    new Exchange(call, deps, resolve, reject, null, null),
  );
}

function dispatchTo(
  call: ForwardCall,
  deps: ForwardDeps,
  attempt: UpstreamAttempt,
  out: UpstreamRequest,
  resolve: () => void,
  reject: (err: Error) => void,
): void {
  dispatch(
    call,
    deps,
    attempt.dispatcher,
    attempt.origin,
    out,
    new Exchange(call, deps, resolve, reject, attempt, out),
  );
}

/** The one request every upstream call is sent as, the provider key's or an account upstream's. */
function dispatch(
  call: ForwardCall,
  deps: ForwardDeps,
  dispatcher: Dispatcher,
  origin: string,
  out: BuiltRequest,
  exchange: Exchange,
): void {
  dispatcher.dispatch(
    {
      origin,
      path: out.path,
      method: call.req.method as Dispatcher.HttpMethod,
      headers: out.headers,
      body: call.upload?.stream ?? out.body,
      headersTimeout: deps.timeoutMs,
      bodyTimeout: deps.timeoutMs,
    },
    exchange,
  );
}

/** An upstream that could not be sent the call (its credential could not be made): a 502 naming it. */
function notSent(attempt: UpstreamAttempt, err: Error): GatewayError {
  return new GatewayError(
    'api_error',
    `The account's upstream ${attempt.label} could not be called: ${err.message}. An account admin fixes its credential.`,
    { status: 502, headers: { 'x-should-retry': 'false' } },
  );
}

/** One call in flight: undici's handler for the upstream answer, writing it to the client. */
class Exchange implements Dispatcher.DispatchHandler, Endable, QuietStream {
  readonly #call: ForwardCall;
  readonly #deps: ForwardDeps;
  readonly #resolve: () => void;
  readonly #reject: (err: Error) => void;
  /** performance.now() when the call went upstream: the gateway's time before it is overhead. */
  readonly #dispatchedAt: number;
  #controller: Dispatcher.DispatchController | null = null;
  #clientGone = false;
  #status = 0;
  #errorType: string | null = null;
  #partial = false;
  #ttfbMs: number | null = null;
  #bytes = 0;
  #overheadMs: number | null = null;
  #upstreamRequestId: string | null = null;
  #tap: SseUsageTap | JsonUsageTap | null = null;
  /** A resumable stream: its events are cut whole, numbered and kept. */
  #framer: SseFramer | null = null;
  #kept: KeptStream | null = null;
  #backpressure = false;
  #replaced = false;
  #done = false;
  #shutdown = false;
  readonly #leave: (() => void) | undefined;
  readonly #attempt: UpstreamAttempt | null;
  #out: UpstreamRequest | null;
  /** Set once the answer is taken (the request's bytes are let go then): what the record reads of them. */
  #sent: { bytes: number | null; mapped: boolean } | null = null;
  /** This upstream failed before its first byte and the next one has the call. */
  #handedOff = false;
  wrote = false;
  quietTicks = 0;

  constructor(
    call: ForwardCall,
    deps: ForwardDeps,
    resolve: () => void,
    reject: (err: Error) => void,
    attempt: UpstreamAttempt | null,
    out: UpstreamRequest | null,
  ) {
    this.#attempt = attempt;
    this.#out = out;
    this.#call = call;
    this.#deps = deps;
    this.#resolve = resolve;
    this.#reject = reject;
    // The client may have left while the body was checked or limits awaited.
    this.#clientGone = call.res.destroyed;
    call.res.once('close', this.#onClientClose);
    this.#leave = deps.inFlight?.add(this);
    this.#dispatchedAt = performance.now();
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
      this.#endWithError(err);
    } else {
      // A JSON answer half sent cannot carry an error any more.
      res.destroy();
    }
    this.#controller?.abort(new Error('the gateway is shutting down'));
  }

  /** Between two events of a silent stream: a comment line keeps the client's connection open. */
  keepAlive(): void {
    const atBoundary = this.#framer ? this.#framer.atBoundary : (this.#tap as SseUsageTap).atBoundary;
    if (!atBoundary || this.#clientGone || this.#backpressure) return;
    this.quietTicks = 0;
    this.#call.res.write(KEEP_ALIVE_LINE);
  }

  readonly #onClientClose = (): void => {
    if (this.#call.res.writableFinished) return;
    this.#clientGone = true;
    // A resumable stream is read to its end and kept: the client may come back for the rest.
    if (this.#kept) {
      this.#kept.clientLeft();
      return this.#controller?.resume();
    }
    this.#controller?.abort(new Error('client closed the connection'));
  };

  readonly #onDrain = (): void => {
    this.#backpressure = false;
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
    if (statusCode < 200 || this.#shutdown || this.#handedOff) return;
    if (failsOver(statusCode) && this.#canFailOver()) return this.#failOver(controller, statusCode);
    if (statusCode === 401 && this.#out && this.#canResend()) {
      const again = this.#attempt?.refused?.(this.#out);
      if (again) return this.#failOver(controller, statusCode, again);
    }
    const answeredAt = performance.now();
    // undici keeps the raw header buffers on the controller for the whole response: about 4 KB
    // per open stream that nothing here reads again (heap snapshot with 1,000 streams open).
    controller.rawHeaders = null;
    const call = this.#call;
    this.#status = statusCode;
    const rid = headers['request-id'];
    this.#upstreamRequestId = (Array.isArray(rid) ? rid[0] : rid) ?? null;
    const replacement =
      this.#attempt === null || this.#attempt.providerKey
        ? this.#deps.onUpstreamStatus?.(call, statusCode)
        : null;
    if (replacement) return this.#replace(replacement);
    // This answer is the call's: nothing is sent again, so the request's bytes (up to the body
    // limit) are not kept for the minutes a stream can last.
    this.#sent = {
      bytes: call.body?.length ?? call.upload?.length ?? null,
      mapped: this.#out?.mapped ?? false,
    };
    this.#out = null;
    call.body = null;
    const sse = statusCode === 200 && String(headers['content-type'] ?? '').startsWith('text/event-stream');
    const out = clientHeaders(headers, call.requestId);
    if (call.limitHeaders) {
      for (const name in out) if (name.startsWith('anthropic-ratelimit-')) delete out[name];
      Object.assign(out, call.limitHeaders);
    }
    const events = this.#deps.streamEvents;
    if (call.resumable && events) {
      out['keygate-call-id'] = call.requestId;
      if (sse) {
        const { key } = call.principal;
        this.#kept = events.open(call.requestId, {
          accountId: key.accountId,
          keyId: key.id,
          memberId: key.memberId,
        });
        this.#framer = new SseFramer(this.#onEvent);
      }
    }
    this.#tap = sse ? new SseUsageTap() : new JsonUsageTap();
    this.#overheadMs = this.#dispatchedAt - call.startedAt + (performance.now() - answeredAt);
    out['keygate-overhead-ms'] = this.#overheadMs.toFixed(3);
    call.res.writeHead(statusCode, out);
    if (sse) {
      // The head goes out with the first event, in one write: an upstream that sends its head and
      // first events together (most do) costs one syscall, not two. One that keeps the first
      // event back gets its head flushed on the next turn, so the client knows the stream is open.
      setImmediate(this.#flushIfSilent);
      this.#deps.keepAlive?.watch(this);
    }
  }

  readonly #flushIfSilent = (): void => {
    const res = this.#call.res;
    if (!this.wrote && !res.destroyed && !res.writableEnded) res.flushHeaders();
  };

  /** Another upstream follows, the client has seen nothing, and the body can be sent again. */
  #canFailOver(): boolean {
    return this.#attempt?.next != null && this.#canResend();
  }

  #canResend(): boolean {
    return !this.#call.upload && !this.#clientGone && !this.#shutdown;
  }

  /**
   * Hands the call to the next upstream: this one is dropped unrecorded, so the call is recorded
   * once, by the upstream that answers it.
   */
  #failOver(
    controller: Dispatcher.DispatchController | null,
    why: number | string | undefined,
    to: UpstreamAttempt | null = this.#attempt!.next,
  ): void {
    this.#handedOff = true;
    this.#done = true;
    this.#leave?.();
    this.#call.res.off('close', this.#onClientClose);
    this.#status = 0;
    const from = this.#attempt!;
    this.#deps.logger.warn(
      to === from.next ? 'upstream failed over' : 'upstream retried with a new credential',
      {
        requestId: this.#call.requestId,
        from: from.label,
        why,
      },
    );
    controller?.abort(new Error('failed over to the next upstream'));
    send(this.#call, this.#deps, to, this.#resolve, this.#reject);
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
    if (this.#replaced || this.#shutdown || this.#handedOff) return;
    this.#ttfbMs ??= performance.now() - this.#call.startedAt;
    this.#bytes += chunk.length;
    this.#tap!.write(chunk);
    if (this.#framer) return this.#framer.write(chunk);
    if (this.#clientGone) return;
    this.wrote = true;
    if (!this.#call.res.write(chunk)) this.#pause(controller);
  }

  /** A whole event of a resumable stream: numbered, kept, and sent if the client is there. */
  readonly #onEvent = (lines: readonly string[]): void => {
    const kept = this.#kept!;
    const frame = `id: ${this.#call.requestId}:${kept.seq + 1}\n${lines.join('\n')}\n\n`;
    kept.add(frame);
    if (this.#clientGone) return;
    this.wrote = true;
    if (!this.#call.res.write(frame) && !this.#backpressure && this.#controller)
      this.#pause(this.#controller);
  };

  #pause(controller: Dispatcher.DispatchController): void {
    this.#backpressure = true;
    controller.pause();
    this.#call.res.once('drain', this.#onDrain);
  }

  onResponseEnd(): void {
    if (this.#handedOff) return;
    this.#framer?.end();
    this.#kept?.end();
    if (!this.#clientGone) this.#call.res.end();
    this.#finish();
    this.#resolve();
  }

  onResponseError(_c: Dispatcher.DispatchController | null, err: Error): void {
    const { requestId } = this.#call;
    const { logger, timeoutMs } = this.#deps;
    if (this.#handedOff) return;
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
      if (this.#canFailOver() && unreachable(err)) return this.#failOver(null, codeOf(err));
      if (this.#canFailOver() && err instanceof GatewayError) return this.#failOver(null, err.message);
      const failure = upstreamFailure(err, timeoutMs);
      this.#status = failure.status;
      this.#errorType = failure.type;
      if (failure.type === 'api_error') logger.warn('upstream unreachable', { requestId, code: codeOf(err) });
      this.#finish();
      return this.#reject(failure);
    }
    this.#partial = true;
    if (this.#clientGone && !this.#kept) {
      this.#errorType = 'client_closed';
    } else {
      const timedOut = codeOf(err) === 'UND_ERR_BODY_TIMEOUT';
      this.#errorType = timedOut ? 'timeout_error' : 'api_error';
      logger.warn('upstream stream broke', { requestId, code: codeOf(err) });
      // A stream says why it ends, in the provider's shape; a JSON answer half sent cannot.
      if (this.#tap instanceof SseUsageTap && timedOut) this.#endWithError(readTimeout(timeoutMs, true));
      else this.#call.res.destroy();
    }
    this.#finish();
    this.#resolve();
  }

  /** Ends a stream with an `error` event, as the provider ends one that fails after HTTP 200. */
  #endWithError(err: GatewayError): void {
    const event = errorEvent(err, this.#call.requestId);
    const kept = this.#kept;
    if (kept) {
      this.#framer?.end();
      const frame = `id: ${this.#call.requestId}:${kept.seq + 1}\n${event}`;
      kept.add(frame);
      kept.end();
      if (!this.#clientGone) this.#call.res.end(frame);
    } else if (!this.#clientGone) {
      this.#call.res.end(event);
    }
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
      if (tap instanceof SseUsageTap) {
        this.#deps.keepAlive?.unwatch(this);
        if (!tap.complete) this.#partial = true;
      }
    }
    this.#kept?.end();
    if (this.#shutdown) this.#errorType = 'shutdown';
    // A stream that ended before the provider's final count gets the estimate from its content.
    const { usage, estimated } = tap ? settleUsage(tap) : { usage: null, estimated: false };
    const record = callRecord(call, {
      model: (this.#sent?.mapped ?? this.#out?.mapped) ? call.model : (tap?.model ?? call.model),
      status: this.#status,
      errorType: this.#errorType,
      usage,
      estimated,
      upstreamMessageId: tap?.messageId ?? null,
      upstreamRequestId: this.#upstreamRequestId,
      ttfbMs: this.#ttfbMs,
      partial: this.#partial,
      requestBytes: this.#sent ? this.#sent.bytes : (call.body?.length ?? call.upload?.length ?? null),
      responseBytes: this.#bytes,
      overheadMs: this.#overheadMs,
      upstream: this.#attempt?.label ?? null,
    });
    this.#deps.record(record);
  }
}
