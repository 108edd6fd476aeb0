import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { FailedAttempts } from '../auth/attempts';
import { presentedCredential } from '../lib/credentials';
import { GatewayError } from '../lib/errors';

export interface OperatorAuthOptions {
  /** Wrong tokens one client address may send per minute before it gets 429. */
  maxFailuresPerMinute?: number;
  clock?: () => number;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The operator token, compared in constant time: both sides are hashed first, so neither the
 * bytes nor the length of a guess change how long the comparison takes. Wrong tokens are
 * counted per client address; past the budget the client gets 429 until the window resets.
 */
export function operatorAuth(token: string | null, opts: OperatorAuthOptions = {}): MiddlewareHandler {
  const expected = token ? digest(token) : null;
  const budget = opts.maxFailuresPerMinute ?? 20;
  const failed = new FailedAttempts(opts.clock ? { clock: opts.clock } : {});
  return async function operatorAuth(c, next) {
    if (!expected)
      throw new GatewayError(
        'permission_error',
        'The operator API is off: set KEYGATE_OPERATOR_TOKEN to enable it.',
      );
    const client: string = c.env?.incoming?.socket?.remoteAddress ?? '';
    failed.check('operator', client, budget, 'operator tokens');
    const presented = presentedCredential(c.req.header('authorization'), c.req.header('x-api-key'));
    if (!timingSafeEqual(digest(presented ?? ''), expected)) {
      // A request with no credential at all is not a guess.
      if (presented) failed.fail('operator', client);
      throw new GatewayError(
        'authentication_error',
        "Invalid operator token: send 'Authorization: Bearer $KEYGATE_OPERATOR_TOKEN'.",
      );
    }
    await next();
  };
}

/** Who the audit log names for an operator request: the CLI says so in a header. */
export function operatorActor(header: string | undefined): 'cli' | 'operator' {
  return header === 'cli' ? 'cli' : 'operator';
}
