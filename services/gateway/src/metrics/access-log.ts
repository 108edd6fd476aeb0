import type { Logger } from '../lib/logger';
import type { CallRecord } from '../lib/call-record';
import { usageFigures } from '../usage/usage';

// Probes and scrapes come every few seconds: their lines are at debug level.
const QUIET = new Set(['/healthz', '/health', '/readyz', '/metrics']);
// Records of requests whose line is not written yet; a bound in case a request never ends.
const MAX_HELD = 10_000;

export interface AccessRequest {
  method: string;
  path: string;
  status: number;
  /** performance.now() when the request came in. */
  startedAt: number;
}

/**
 * One access line per request, at info level, written when the request ends. A call's line
 * carries the figures of its call record (the proxy records a call before its request ends):
 * account, key, model, latency, time to first byte, tokens, error type and the provider's
 * request id. The request id comes from the request's child logger.
 */
export class AccessLog {
  readonly #held = new Map<string, CallRecord>();

  /** Keeps a call's record until its request's line is written. */
  hold(record: CallRecord): void {
    if (this.#held.size >= MAX_HELD) this.#held.delete(this.#held.keys().next().value!);
    this.#held.set(record.id, record);
  }

  write(log: Logger, requestId: string, req: AccessRequest, now: number): void {
    const call = this.#held.get(requestId);
    if (!call) {
      const line = {
        method: req.method,
        path: req.path,
        status: req.status,
        latencyMs: round(now - req.startedAt),
      };
      return QUIET.has(req.path) ? log.debug('access', line) : log.info('access', line);
    }
    this.#held.delete(requestId);
    const u = call.usage ? usageFigures(call.usage) : null;
    // One literal, no spread: this runs once per call.
    log.info('access', {
      method: req.method,
      path: req.path,
      status: call.status,
      latencyMs: round(call.latencyMs),
      accountId: call.accountId,
      keyId: call.keyId,
      model: call.model,
      stream: call.stream,
      ttfbMs: call.ttfbMs === null ? null : round(call.ttfbMs),
      tokens: u && {
        input: u.inputTokens,
        cacheWrite5m: u.cacheCreation5mTokens,
        cacheWrite1h: u.cacheCreation1hTokens,
        cacheRead: u.cacheReadInputTokens,
        output: u.outputTokens,
      },
      errorType: call.errorType,
      retryCount: call.retryCount,
      partial: call.partial,
      upstreamRequestId: call.upstreamRequestId,
    });
  }
}

const round = (ms: number) => Math.round(ms * 10) / 10;
