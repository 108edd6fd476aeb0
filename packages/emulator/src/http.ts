import type { IncomingMessage, ServerResponse } from 'node:http';
import { EmulatorError, errorBody } from './errors';
import type { Ledger } from './ledger';
import type { LedgerEntry } from './types';

/** The provider's whole-request cap. */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

const RATE_LIMITS = [
  ['requests', 4_000],
  ['tokens', 2_000_000],
  ['input-tokens', 1_600_000],
  ['output-tokens', 400_000],
] as const;

/** Header names and values, flat (`[name, value, name, value…]`), as `writeHead` takes them. */
export type HeaderList = string[];

let rateSecond = -1;
let rateHeaders: HeaderList = [];

/** `anthropic-ratelimit-*` headers; rebuilt at most once a second (reset is RFC 3339). */
function rateLimitHeaders(now: number): HeaderList {
  const second = Math.floor(now / 1000);
  if (second !== rateSecond) {
    const reset = new Date((second + 60) * 1000).toISOString().replace('.000Z', 'Z');
    const headers: HeaderList = [];
    for (const [name, limit] of RATE_LIMITS) {
      headers.push(`anthropic-ratelimit-${name}-limit`, String(limit));
      headers.push(`anthropic-ratelimit-${name}-remaining`, String(limit - 1));
      headers.push(`anthropic-ratelimit-${name}-reset`, reset);
    }
    rateSecond = second;
    rateHeaders = headers;
  }
  return rateHeaders;
}

// Flat arrays, not objects: spreading a dozen rate-limit headers into a fresh object per
// response cost ~5 µs, a measurable share of the emulator's per-request CPU.
export function jsonHeaders(requestId: string, withRateLimits: boolean): HeaderList {
  const own = ['content-type', 'application/json', 'request-id', requestId];
  return withRateLimits ? rateLimitHeaders(Date.now()).concat(own) : own;
}

export function sseHeaders(requestId: string): HeaderList {
  return rateLimitHeaders(Date.now()).concat([
    'content-type',
    'text/event-stream; charset=utf-8',
    'cache-control',
    'no-cache',
    'request-id',
    requestId,
  ]);
}

/** One request in flight: what every responder needs. */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  entry: LedgerEntry | null;
  ledger: Ledger;
}

/** Sends a complete JSON response and finalises the ledger entry. */
export function sendJson(ex: Exchange, status: number, body: string, headers: HeaderList): void {
  const { res, entry } = ex;
  if (res.destroyed) return clientGone(ex);
  headers.push('content-length', String(Buffer.byteLength(body)));
  res.writeHead(status, headers);
  res.end(body);
  if (entry) {
    entry.status = status;
    ex.ledger.close(entry, true, Date.now());
  }
}

/** The provider's error shape, from one place. */
export function sendError(ex: Exchange, err: EmulatorError): void {
  if (ex.entry) ex.entry.errorType = err.type;
  const headers = jsonHeaders(ex.requestId, false);
  if (err.headers) for (const name in err.headers) headers.push(name, err.headers[name]!);
  sendJson(ex, err.status, errorBody(err.type, err.message, ex.requestId), headers);
}

/** The client left before we answered: recorded as 499 (nginx's "client closed request"). */
export function clientGone(ex: Exchange): void {
  if (!ex.entry || ex.entry.endedAt !== null) return;
  ex.entry.status = 499;
  ex.ledger.close(ex.entry, false, Date.now());
}

/** Reads the whole body; 413 past MAX_BODY_BYTES. Callbacks, not promises: this is the hot path. */
export function readBody(ex: Exchange, onBody: (body: Buffer) => void): void {
  const { req } = ex;
  const chunks: Buffer[] = [];
  let size = 0;
  let failed = false;
  req.on('data', (chunk: Buffer) => {
    if (failed) return;
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      failed = true;
      sendError(
        ex,
        new EmulatorError(
          'request_too_large',
          `Request exceeds the maximum allowed number of bytes (${MAX_BODY_BYTES}).`,
        ),
      );
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (!failed) onBody(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  });
  req.on('error', () => clientGone(ex));
}
