import type { Context } from 'hono';
import { newId } from './ids';

/** The provider's error types and the status each one answers with. */
export const ERROR_STATUS = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
} as const;

export type ErrorType = keyof typeof ERROR_STATUS;

/** The one error the gateway throws; `app.onError` turns it into the provider's error shape. */
export class GatewayError extends Error {
  readonly type: ErrorType;
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(type: ErrorType, message: string, opts: { status?: number; headers?: Record<string, string> } = {}) {
    super(message);
    this.name = 'GatewayError';
    this.type = type;
    this.status = opts.status ?? ERROR_STATUS[type];
    this.headers = opts.headers ?? {};
  }
}

export function errorBody(type: string, message: string, requestId: string): string {
  return JSON.stringify({ type: 'error', error: { type, message }, request_id: requestId });
}

export function newRequestId(): string {
  return newId('req');
}

/** The provider's error shape, with its status and a request id. */
export function errorResponse(err: GatewayError, requestId: string): Response {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'request-id': requestId, ...err.headers };
  // Don't read the rest of an oversized upload just to keep the connection.
  if (err.type === 'request_too_large') headers.connection = 'close';
  return new Response(errorBody(err.type, err.message, requestId), { status: err.status, headers });
}

/** The one place errors become responses; unknown errors are reported as api_error. */
export function renderError(err: Error, c: Context, log?: (err: Error, requestId: string) => void): Response {
  const requestId: string = c.get('requestId') ?? newRequestId();
  if (err instanceof GatewayError) return errorResponse(err, requestId);
  log?.(err, requestId);
  return errorResponse(new GatewayError('api_error', 'Internal server error.'), requestId);
}
