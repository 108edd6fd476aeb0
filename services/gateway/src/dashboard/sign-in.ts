import type { Context } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { hashKey } from '../auth/keys';
import { GatewayError } from '../lib/errors';
import { randomBase62 } from '../lib/ids';
import type { DashboardDeps } from './env';
import { cookieOptions, sameSecret, startSession } from './session';
import { keyPrefix, type SignInLimiter } from './sign-in-limiter';
import { readForm } from './form';

const FORM_COOKIE = 'kg_signin';

/** A fresh CSRF token for the sign-in form, also set as a cookie the post must match. */
export function signInToken(c: Context): string {
  const token = randomBase62(32);
  setCookie(c, FORM_COOKIE, token, cookieOptions(c, 3600));
  return token;
}

/**
 * Exchanges a credential for a session: an admin key (the account), a member's own key (their
 * rows only) or the operator token (every account). Throws the reason to show on the form.
 */
export async function signIn(c: Context, deps: DashboardDeps, limiter: SignInLimiter): Promise<void> {
  const body = await readForm(c);
  const formToken = getCookie(c, FORM_COOKIE);
  if (typeof body._csrf !== 'string' || !formToken || !sameSecret(body._csrf, formToken)) {
    throw new GatewayError('permission_error', 'This form has expired: reload the page and sign in again.');
  }
  const token = typeof body.token === 'string' ? body.token.trim() : '';
  const address = c.env?.incoming?.socket?.remoteAddress ?? '';
  const prefix = keyPrefix(token);
  const tooMany = (wait: number) =>
    new GatewayError('rate_limit_error', `Too many failed sign-ins: try again in ${wait} s.`, {
      headers: { 'retry-after': String(wait) },
    });
  const addressWait = limiter.addressWait(address);
  if (addressWait > 0) throw tooMany(addressWait);
  // Checked before the attempt: the right credential signs in even while its bucket is full.
  const credentialWait = limiter.credentialWait(prefix);
  try {
    const now = deps.clock();
    if (!token.startsWith('kg_')) {
      if (!deps.operatorToken || !sameSecret(token, deps.operatorToken))
        throw new GatewayError('authentication_error', 'Not a Keygate key, nor the operator token.');
      return await startSession(
        c,
        deps.store,
        { kind: 'operator', accountId: null, memberId: null, keyId: null },
        now,
        { operatorToken: deps.operatorToken },
      );
    }
    const { key, secretExpiresAt } = await deps.resolver.resolve(token, ['admin', 'live', 'test'], address);
    // A secret in its rotation grace still calls the API, but opens no session (it would end at once).
    if (secretExpiresAt)
      throw new GatewayError(
        'authentication_error',
        "This key was rotated: sign in with the key's new secret.",
      );
    // The session lives as long as this very secret is the key's current one.
    const credential = { secretHash: hashKey(token) };
    if (key.kind === 'admin') {
      return await startSession(
        c,
        deps.store,
        { kind: 'admin', accountId: key.accountId, memberId: key.memberId, keyId: key.id },
        now,
        credential,
      );
    }
    if (!key.memberId)
      throw new GatewayError(
        'authentication_error',
        'This key belongs to an app or environment, not a member: sign in with an admin key or one of your own member keys.',
      );
    await startSession(
      c,
      deps.store,
      { kind: 'member', accountId: key.accountId, memberId: key.memberId, keyId: key.id },
      now,
      credential,
    );
  } catch (err) {
    if (!(err instanceof GatewayError) || err.type === 'rate_limit_error') throw err;
    limiter.fail(address, prefix);
    throw credentialWait > 0 ? tooMany(credentialWait) : err;
  }
}
