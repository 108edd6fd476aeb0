/**
 * The provider's error types and the HTTP status each one answers with. A few refusals keep
 * their type under another status: a method the path does not take is 405
 * invalid_request_error (as the provider answers), a header block over the limit 431
 * request_too_large, a request line or headers not received in time 408 timeout_error.
 */
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
