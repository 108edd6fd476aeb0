import type { Context } from 'hono';
import { GatewayError } from '../lib/errors';

/**
 * A base URL that ends in /v1 (`ANTHROPIC_BASE_URL=http://gateway:8080/v1`, a common slip): the
 * clients add /v1 themselves, so every call arrives as /v1/v1/…. Forwarded, the provider's 404
 * made Claude Code say "There's an issue with the selected model"; answered here as a 400 in the
 * provider's shape (which Claude Code and the SDKs show as it is), the message says the fix.
 */
export function doubledV1(c: Context): never {
  const meant = c.req.path.slice('/v1'.length);
  throw new GatewayError(
    'invalid_request_error',
    `This request went to ${c.req.path}: the base URL ends in /v1, and clients add /v1 themselves. ` +
      `Set ANTHROPIC_BASE_URL (or the SDK's baseURL) to the gateway's address without /v1 ` +
      `(e.g. http://127.0.0.1:8080, not http://127.0.0.1:8080/v1), so the call goes to ${meant}.`,
    { headers: { 'x-should-retry': 'false' } },
  );
}
