import { databaseUnavailable } from './database-unavailable';
import type { Context } from 'hono';
import { ERROR_STATUS, type ErrorType } from '@keygate/protocol';
import { STATUS_CODES } from 'node:http';
import { newTimeOrderedId } from './ids';

export { ERROR_STATUS, type ErrorType };

/** The one error the gateway throws; `app.onError` turns it into the provider's error shape. */
export class GatewayError extends Error {
  readonly type: ErrorType;
  readonly status: number;
  readonly headers: Record<string, string>;
  /** The rule behind a refusal (`rate_limit:input_tokens`, `spend_limit:spl_…`), for the call log. */
  readonly reason: string | null;

  constructor(
    type: ErrorType,
    message: string,
    opts: { status?: number; headers?: Record<string, string>; reason?: string } = {},
  ) {
    super(message);
    this.name = 'GatewayError';
    this.type = type;
    this.reason = opts.reason ?? null;
    this.status = opts.status ?? ERROR_STATUS[type];
    this.headers = opts.headers ?? {};
    // A wrong or refused credential stays wrong: the SDKs (Claude Code's among them) would otherwise
    // retry a 401 with backoff, for minutes, before the user sees it. They honour this header.
    if ((this.status === 401 || this.status === 403) && !('x-should-retry' in this.headers))
      this.headers = { ...this.headers, 'x-should-retry': 'false' };
  }
}

/**
 * A 503 for what cannot be checked while the gateway's database is unreachable: `api_error`,
 * which the provider's clients retry (any status of 500 and above, and `x-should-retry: true`
 * whatever the status), after `retry-after`. Not `overloaded_error`: Claude Code takes that as
 * the model being overloaded, and `--fallback-model` then switches models ("automatic fallback
 * to specified model when default model is overloaded", its CLI reference as quoted in
 * anthropics/claude-code#19371, read 2026-11-29); the model is not what is away.
 */
export function databaseUnreachable(what: string): GatewayError {
  return new GatewayError(
    'api_error',
    `${what} cannot be checked right now: the gateway's database is unreachable. Retry in a few seconds.`,
    { status: 503, headers: { 'retry-after': '5', 'x-should-retry': 'true' } },
  );
}

export function errorBody(type: string, message: string, requestId: string): string {
  return JSON.stringify({ type: 'error', error: { type, message }, request_id: requestId });
}

export function newRequestId(): string {
  return newTimeOrderedId('req');
}

/** The provider's error shape, with its status and a request id. */
export function errorResponse(err: GatewayError, requestId: string): Response {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'request-id': requestId,
    ...err.headers,
  };
  // Don't read the rest of an oversized upload just to keep the connection.
  if (err.type === 'request_too_large') headers.connection = 'close';
  return new Response(errorBody(err.type, err.message, requestId), { status: err.status, headers });
}

/** The one place errors become responses; unknown errors are reported as api_error. */
/**
 * The refusal an error stands for: a GatewayError as thrown, or the 503 for a database that
 * cannot be reached (a query failing during an outage, on any route); null for a failure of ours.
 */
export function knownError(err: unknown): GatewayError | null {
  if (err instanceof GatewayError) return err;
  return databaseUnavailable(err) ? databaseUnreachable('This request') : null;
}

export function renderError(err: Error, c: Context, log?: (err: Error, requestId: string) => void): Response {
  const requestId: string = c.get('requestId') ?? newRequestId();
  const known = knownError(err);
  if (known) return errorResponse(known, requestId);
  log?.(err, requestId);
  return errorResponse(new GatewayError('api_error', 'Internal server error.'), requestId);
}

/** What Node's HTTP parser refuses before the app runs, by its error code: status, type, message. */
function refusalOf(
  err: Error & { code?: string; reason?: string },
  maxHeaderBytes: number,
): [number, ErrorType, string] {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return [
        431,
        'request_too_large',
        `Request header fields too large: the header block is limited to ${maxHeaderBytes} bytes.`,
      ];
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return [413, 'request_too_large', 'Chunk extensions too large.'];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'timeout_error', 'The request was not received in time.'];
    default:
      // llhttp's reason is a fixed phrase ("Invalid header value char"), never request bytes.
      return [
        400,
        'invalid_request_error',
        `Malformed HTTP request: ${err.reason ?? 'could not be parsed'}.`,
      ];
  }
}

/**
 * A parser refusal as a complete HTTP/1.1 message in the provider's error shape, for writing
 * straight to the socket: there is no request or response object yet, and the connection
 * cannot carry another request, so it says `connection: close`.
 */
export function parserRefusal(
  err: Error,
  requestId: string,
  maxHeaderBytes: number,
): { status: number; type: ErrorType; http: string } {
  const [status, type, message] = refusalOf(err, maxHeaderBytes);
  const body = errorBody(type, message, requestId);
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'content-type: application/json',
    `content-length: ${Buffer.byteLength(body)}`,
    `request-id: ${requestId}`,
    'connection: close',
  ];
  return { status, type, http: `${head.join('\r\n')}\r\n\r\n${body}` };
}

/**
 * OAuth 2.0's error response (RFC 6749 §5.2, RFC 8628 §3.5, read 2026-11-29): `{error,
 * error_description}` and no-store, for the endpoints an OAuth client reads (a gateway sign-in's
 * device authorization and token endpoints), which do not parse the provider's shape.
 */
export function oauthErrorResponse(
  error: string,
  description: string,
  requestId: string,
  opts: { status?: number; headers?: Record<string, string> } = {},
): Response {
  return new Response(JSON.stringify({ error, error_description: description }), {
    status: opts.status ?? 400,
    headers: {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'request-id': requestId,
      ...opts.headers,
    },
  });
}
