import type { APIRequest, Middleware, MiddlewareContext, MiddlewareNext } from '@anthropic-ai/sdk';
import { GROUP_HEADER } from './options';
import { settleUsage, SseUsageTap, type TapResult } from '@keygate/protocol';
import {
  categorize,
  normalizeUsage,
  type Endpoint,
  type ErrorCategory,
  type UsageRecord,
} from './usage-types';

type RequestOptions = NonNullable<MiddlewareContext['options']>;
type Json = Record<string, unknown>;
/** What a Messages answer said about itself, as far as it got. */
type StreamFacts = Pick<
  TapResult,
  'messageId' | 'model' | 'usage' | 'stopReason' | 'errorType' | 'complete' | 'deltaUsage' | 'contentBytes'
>;

export interface UsageTapDeps {
  /** Sent as `keygate-group-id` unless the request carries one. */
  groupId: string | null;
  /** The retries the SDK allows this request, to know which failed attempt is the last. */
  maxRetries(options: RequestOptions): number;
  deliver(record: UsageRecord): void;
  now?: () => number;
}

/** One API call across its attempts. */
interface CallState {
  startedAt: number;
  attempts: number;
  retryCategories: ErrorCategory[];
  /** An error response the SDK may still retry; settled by the next attempt, by `settleStatusError`, or by an abort. */
  pending: UsageRecord | null;
  stopWatchingAbort: (() => void) | null;
}

type Outcome = Pick<UsageRecord, 'status' | 'errorType' | 'requestId' | 'gatewayRequestId'> & {
  facts?: Partial<StreamFacts> | null;
  ttfbMs?: number | null;
};

/**
 * Observes every HTTP attempt of the client, innermost in the SDK's middleware chain, and
 * turns each API call into one `UsageRecord`. It never changes what the app receives: JSON
 * usage is read from a clone, and a stream's bytes are handed on as they arrive while a
 * reader picks the usage out of them on the side.
 */
export class UsageTap {
  readonly middleware: Middleware = (request, next, ctx) => this.#observe(request, next, ctx);
  #calls = new WeakMap<RequestOptions, CallState>();
  #pendingByHeaders = new WeakMap<Headers, CallState>();
  #pendingByRequestId = new Map<string, CallState>();
  readonly #now: () => number;

  constructor(private readonly deps: UsageTapDeps) {
    this.#now = deps.now ?? Date.now;
  }

  /** The SDK gave up on an error response (its `makeStatusError` hook): that attempt was the last. */
  settleStatusError(headers: Headers): void {
    const requestId = headers.get('request-id');
    const call =
      this.#pendingByHeaders.get(headers) ??
      (requestId ? this.#pendingByRequestId.get(requestId) : undefined);
    const record = call?.pending;
    if (!call || !record) return;
    this.#clearPending(call);
    this.deps.deliver({ ...record, latencyMs: this.#now() - call.startedAt });
  }

  async #observe(request: APIRequest, next: MiddlewareNext, ctx: MiddlewareContext): Promise<Response> {
    // The app key travels as Bearer only; an x-api-key (say from ANTHROPIC_CUSTOM_HEADERS) would leak a provider key.
    request.headers.delete('x-api-key');
    if (this.deps.groupId !== null && !request.headers.has(GROUP_HEADER))
      request.headers.set(GROUP_HEADER, this.deps.groupId);
    const options = ctx.options;
    if (!options) return next(request);

    const call = this.#callFor(options);
    if (call.pending) {
      call.retryCategories.push(call.pending.errorCategory ?? 'other');
      this.#clearPending(call);
    }
    const retries = retryCount(request.headers, call.attempts);
    call.attempts += 1;
    const finish = (outcome: Outcome) => this.#finish(options, call, request, retries, outcome);

    let response: Response;
    try {
      response = await next(request);
    } catch (error) {
      const aborted = options.signal?.aborted === true;
      const errorType = aborted ? 'aborted' : isTimeout(error) ? 'timeout' : 'connection';
      // The SDK cannot replay a streamed upload body, so it never retries one.
      const allowed = isStreamingBody(options.body) ? 0 : this.deps.maxRetries(options);
      if (aborted || retries >= allowed) {
        finish({ status: null, errorType, requestId: null, gatewayRequestId: null });
      } else {
        call.retryCategories.push(categorize(null, errorType));
      }
      throw error;
    }

    const ids = {
      requestId: response.headers.get('request-id'),
      gatewayRequestId: response.headers.get('keygate-request-id'),
    };
    const ttfbMs = this.#now() - call.startedAt;
    if (!response.ok) {
      const errorType =
        errorTypeOf(
          await response
            .clone()
            .text()
            .catch(() => ''),
        ) ?? `http_${response.status}`;
      call.pending = this.#record(options, call, request, retries, {
        ...ids,
        status: response.status,
        errorType,
        ttfbMs,
      });
      this.#pendingByHeaders.set(response.headers, call);
      if (ids.requestId) this.#pendingByRequestId.set(ids.requestId, call);
      this.#settleOnAbort(options, call);
      return response;
    }
    const contentType = response.headers.get('content-type') ?? '';
    if (options.stream && response.body && contentType.includes('text/event-stream')) {
      return this.#tapStream(response, options, (facts, errorType) =>
        finish({ ...ids, status: response.status, errorType, facts, ttfbMs }),
      );
    }
    let facts: Partial<StreamFacts> | null = null;
    if (!options.__binaryResponse && /\bjson\b/.test(contentType)) {
      facts = messageFacts(
        await response
          .clone()
          .json()
          .catch(() => null),
      );
    }
    finish({ ...ids, status: response.status, errorType: null, facts, ttfbMs });
    return response;
  }

  #tapStream(
    response: Response,
    options: RequestOptions,
    done: (facts: StreamFacts, errorType: string | null) => void,
  ): Response {
    const reader = response.body!.getReader();
    const sse = new SseUsageTap();
    let settled = false;
    const settle = (fallback: string | null) => {
      if (settled) return;
      settled = true;
      done(sse, sse.errorType ?? fallback);
    };
    const body = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          let chunk: Awaited<ReturnType<typeof reader.read>>;
          try {
            chunk = await reader.read();
          } catch (error) {
            settle(options.signal?.aborted || isAbort(error) ? 'aborted' : 'connection');
            controller.error(error);
            return;
          }
          if (chunk.done) {
            sse.end();
            settle(sse.complete ? null : 'connection');
            controller.close();
            return;
          }
          controller.enqueue(chunk.value);
          sse.write(chunk.value);
        },
        cancel(reason) {
          settle(sse.complete ? null : 'aborted');
          return reader.cancel(reason);
        },
      },
      { highWaterMark: 0 },
    );
    return new Response(body, response);
  }

  #finish(
    options: RequestOptions,
    call: CallState,
    request: APIRequest,
    retries: number,
    outcome: Outcome,
  ): void {
    this.#calls.delete(options);
    this.deps.deliver(this.#record(options, call, request, retries, outcome));
  }

  #record(
    options: RequestOptions,
    call: CallState,
    request: APIRequest,
    retries: number,
    outcome: Outcome,
  ): UsageRecord {
    const facts = outcome.facts ?? {};
    // A stream that ended before the provider's final count: the gateway's estimate, alike.
    const { usage, estimated } =
      facts.complete === false
        ? settleUsage(facts as StreamFacts)
        : { usage: facts.usage ?? null, estimated: false };
    const body = typeof options.body === 'object' && options.body !== null ? (options.body as Json) : {};
    const errorType = outcome.errorType;
    return {
      requestId: outcome.requestId,
      gatewayRequestId: outcome.gatewayRequestId,
      groupId: request.headers.get(GROUP_HEADER) ?? request.headers.get('x-claude-code-session-id'),
      endpoint: endpointOf(request.url),
      method: (request.method ?? options.method).toUpperCase(),
      model: facts.model ?? (typeof body.model === 'string' ? body.model : null),
      messageId: facts.messageId ?? null,
      stream: options.stream === true,
      status: outcome.status,
      errorType,
      errorCategory:
        errorType === null || errorType === 'aborted' ? null : categorize(outcome.status, errorType),
      stopReason: facts.stopReason ?? null,
      usage: usage ? normalizeUsage(usage) : null,
      estimated,
      providerUsage: facts.usage ?? null,
      latencyMs: this.#now() - call.startedAt,
      ttfbMs: outcome.ttfbMs ?? null,
      retries,
      retryCategories: call.retryCategories.slice(),
      startedAt: new Date(call.startedAt),
    };
  }

  /** An app that aborts while the SDK waits to retry gets an APIUserAbortError, and no further attempt comes. */
  #settleOnAbort(options: RequestOptions, call: CallState): void {
    const signal = options.signal;
    if (!signal) return;
    const onAbort = () => {
      const record = call.pending;
      if (!record) return;
      this.#clearPending(call);
      this.deps.deliver({
        ...record,
        errorType: 'aborted',
        errorCategory: null,
        latencyMs: this.#now() - call.startedAt,
      });
    };
    signal.addEventListener('abort', onAbort, { once: true });
    call.stopWatchingAbort = () => signal.removeEventListener('abort', onAbort);
  }

  #callFor(options: RequestOptions): CallState {
    let call = this.#calls.get(options);
    if (!call)
      this.#calls.set(
        options,
        (call = {
          startedAt: this.#now(),
          attempts: 0,
          retryCategories: [],
          pending: null,
          stopWatchingAbort: null,
        }),
      );
    return call;
  }

  #clearPending(call: CallState): void {
    if (call.pending?.requestId) this.#pendingByRequestId.delete(call.pending.requestId);
    call.pending = null;
    call.stopWatchingAbort?.();
    call.stopWatchingAbort = null;
  }
}

function retryCount(headers: Headers, attempts: number): number {
  const sent = Number.parseInt(headers.get('x-stainless-retry-count') ?? '', 10);
  return Number.isSafeInteger(sent) && sent >= 0 ? sent : attempts;
}

function messageFacts(data: unknown): Partial<StreamFacts> | null {
  if (typeof data !== 'object' || data === null || (data as Json).type !== 'message') return null;
  const m = data as Json;
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  const usage = typeof m.usage === 'object' && m.usage !== null ? (m.usage as Json) : null;
  return { messageId: str(m.id), model: str(m.model), stopReason: str(m.stop_reason), usage };
}

function errorTypeOf(body: string): string | null {
  try {
    const type = (JSON.parse(body) as { error?: { type?: unknown } })?.error?.type;
    return typeof type === 'string' ? type : null;
  } catch {
    return null;
  }
}

export function endpointOf(url: string): Endpoint {
  const path = new URL(url).pathname.replace(/\/+$/, '');
  if (path.endsWith('/v1/messages')) return 'messages';
  if (path.endsWith('/v1/messages/count_tokens')) return 'count_tokens';
  if (/\/v1\/models(\/|$)/.test(path)) return 'models';
  return 'other';
}

function isStreamingBody(body: unknown): boolean {
  return (
    body instanceof ReadableStream ||
    (typeof body === 'object' && body !== null && Symbol.asyncIterator in body)
  );
}

function isAbort(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as Error).name === 'AbortError';
}

/** The SDK's own timeout aborts the fetch; undici reports connect timeouts in the error's cause. */
function isTimeout(error: unknown): boolean {
  if (isAbort(error)) return true;
  const cause =
    typeof error === 'object' && error !== null ? (error as { cause?: unknown }).cause : undefined;
  return /time ?out|timed out/i.test(`${String(error)} ${String(cause ?? '')}`);
}
