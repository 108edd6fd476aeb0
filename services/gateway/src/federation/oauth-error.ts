import { GatewayError } from '../lib/errors';

/** RFC 6749 §5.2 error codes the token endpoint answers (read 2026-11-29). */
export type OAuthErrorCode = 'invalid_request' | 'invalid_grant' | 'unsupported_grant_type';

/** A refusal of the token endpoint, answered as RFC 6749 §5.2 `{error, error_description}` with 400. */
export class OAuthError extends Error {
  readonly code: OAuthErrorCode;
  constructor(code: OAuthErrorCode, description: string) {
    super(description);
    this.code = code;
  }
}

/**
 * The token endpoint's answer to any error, in OAuth's shape: its own refusals as they are, the
 * gateway's (a body too large, 429 with retry-after) with their status and headers; anything else
 * is a 500 that names nothing.
 */
export function oauthErrorBody(err: Error): {
  status: number;
  headers: Record<string, string>;
  body: object;
} {
  if (err instanceof OAuthError)
    return { status: 400, headers: {}, body: { error: err.code, error_description: err.message } };
  if (err instanceof GatewayError && err.status < 500)
    return {
      status: err.status,
      headers: err.headers,
      body: { error: err.status === 429 ? 'slow_down' : 'invalid_request', error_description: err.message },
    };
  return { status: 500, headers: {}, body: { error: 'server_error', error_description: 'Internal error.' } };
}
