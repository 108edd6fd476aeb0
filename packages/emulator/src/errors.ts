import { ERROR_STATUS, type ErrorType } from '@keygate/protocol';
export type { ErrorType };

/** Status per error type, as the provider answers. */
export const STATUS_OF: Readonly<Record<ErrorType, number>> = ERROR_STATUS;

/** Thrown anywhere below the router; turned into the provider's error body in one place. */
export class EmulatorError extends Error {
  readonly status: number;
  constructor(
    readonly type: ErrorType,
    message: string,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'EmulatorError';
    this.status = STATUS_OF[type];
  }
}

export const invalid = (message: string): EmulatorError =>
  new EmulatorError('invalid_request_error', message);

export function errorBody(type: string, message: string, requestId: string): string {
  return JSON.stringify({ type: 'error', error: { type, message }, request_id: requestId });
}

/** A JSON request body (none: an empty object), or the provider's 400 for one that is not JSON. */
export function jsonBody(body: Buffer | null): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body?.toString('utf8') || '{}');
  } catch {
    throw invalid('The request body is not valid JSON.');
  }
  // `null`, an array or a scalar is valid JSON but no request: the provider answers 400.
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw invalid('The request body must be a JSON object.');
  return parsed as Record<string, unknown>;
}
