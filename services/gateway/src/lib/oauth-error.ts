import type { Context, ErrorHandler } from 'hono';
import type { IncomingMessage } from 'node:http';
import { discardUnread } from './body-limit';
import { knownError, newRequestId, oauthErrorResponse } from './errors';

/**
 * The error codes OAuth endpoints answer: RFC 6749 §5.2 (token requests) and RFC 8628 §3.5
 * (device polls), read 2026-11-29.
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_grant'
  | 'unsupported_grant_type'
  | 'access_denied'
  | 'authorization_pending'
  | 'slow_down'
  | 'expired_token'
  | 'temporarily_unavailable';

/** A refusal of an OAuth endpoint, answered as `{error, error_description}` (400 unless said). */
export class OAuthError extends Error {
  readonly code: OAuthErrorCode;
  readonly status: number;
  constructor(code: OAuthErrorCode, description: string, status = 400) {
    super(description);
    this.code = code;
    this.status = status;
  }
}

/**
 * An OAuth endpoint's answer to any error: its own refusals as they are, the gateway's (a body
 * too large, 429 with retry-after) with their status and headers, the database out of reach a
 * 503 `temporarily_unavailable` to retry; anything else a 500 that names nothing.
 */
export function oauthErrorBody(err: Error): {
  status: number;
  headers: Record<string, string>;
  body: { error: string; error_description: string };
} {
  if (err instanceof OAuthError)
    return { status: err.status, headers: {}, body: { error: err.code, error_description: err.message } };
  const known = knownError(err);
  if (known) {
    const error =
      known.status === 429
        ? 'slow_down'
        : known.status >= 500
          ? 'temporarily_unavailable'
          : 'invalid_request';
    return {
      status: known.status,
      headers: known.headers,
      body: { error, error_description: known.message },
    };
  }
  return { status: 500, headers: {}, body: { error: 'server_error', error_description: 'Internal error.' } };
}

/**
 * The error handler of every OAuth endpoint (Claude Code's gateway sign-in, workload tokens): the
 * answer above, logged when it is a 500; a refusal made before the body was read (a per-address
 * limit) discards the rest and closes after the answer, so the client reads it, not a reset.
 */
export function oauthErrors(what: string): ErrorHandler {
  return function oauthError(err: Error, c: Context) {
    const out = oauthErrorBody(err);
    if (out.status === 500) c.get('logger')?.error(`${what} failed`, { error: err, stack: err.stack });
    const res = oauthErrorResponse(
      out.body.error,
      out.body.error_description,
      c.get('requestId') ?? newRequestId(),
      {
        status: out.status,
        headers: out.headers,
      },
    );
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    if (incoming && discardUnread(incoming)) res.headers.set('connection', 'close');
    return res;
  };
}
