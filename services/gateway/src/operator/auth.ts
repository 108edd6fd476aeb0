import { timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { presentedCredential } from '../lib/credentials';
import { GatewayError } from '../lib/errors';

/** The operator token, compared in constant time. */
export function operatorAuth(token: string | null): MiddlewareHandler {
  const expected = token ? Buffer.from(token) : null;
  return async function operatorAuth(c, next) {
    if (!expected) throw new GatewayError('permission_error', 'The operator API is off: set KEYGATE_OPERATOR_TOKEN to enable it.');
    const presented = Buffer.from(presentedCredential(c.req.header('authorization'), c.req.header('x-api-key')) ?? '');
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
      throw new GatewayError('authentication_error', "Invalid operator token: send 'Authorization: Bearer $KEYGATE_OPERATOR_TOKEN'.");
    }
    await next();
  };
}

/** Who the audit log names for an operator request: the CLI says so in a header. */
export function operatorActor(header: string | undefined): 'cli' | 'operator' {
  return header === 'cli' ? 'cli' : 'operator';
}
