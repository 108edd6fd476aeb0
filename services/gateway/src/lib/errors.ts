import type { Context } from 'hono';
import { ERROR_STATUS, type ErrorType } from '@keygate/protocol';
import { newId } from './ids';

export { ERROR_STATUS, type ErrorType };

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
