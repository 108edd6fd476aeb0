import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { GatewayError } from '../lib/errors';
import { randomBase62 } from '../lib/ids';
import type { SessionKind } from './dashboard-queries';
import type { DashboardStore } from './install';
import type { DashboardEnv, Viewer } from './env';
import { readForm } from './form';

export const SESSION_COOKIE = 'kg_session';
export const SESSION_HOURS = 12;

const hash = (token: string) => createHash('sha256').update(token).digest();

/** What an operator session records of the token that opened it: a digest, never the token. */
export const operatorTag = (token: string) =>
  createHash('sha256').update('keygate-operator-session\0').update(token).digest();

/** Equal strings, compared in constant time. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Served over TLS, directly or behind a proxy that says so. */
export function overTls(c: Context): boolean {
  return (
    c.req.header('x-forwarded-proto')?.split(',')[0]?.trim() === 'https' ||
    new URL(c.req.url).protocol === 'https:'
  );
}

export function cookieOptions(c: Context, maxAgeSeconds: number) {
  return {
    path: '/dashboard',
    httpOnly: true,
    secure: overTls(c),
    sameSite: 'Strict' as const,
    maxAge: maxAgeSeconds,
  };
}

/** Starts a server-side session and hands its token to the browser as an HttpOnly cookie. */
export async function startSession(
  c: Context,
  store: Pick<DashboardStore, 'dashboard'>,
  who: { kind: SessionKind; accountId: string | null; memberId: string | null; keyId: string | null },
  now: number,
  credential: { secretHash: Buffer } | { operatorToken: string },
): Promise<void> {
  const token = randomBase62(43);
  await store.dashboard.createSession({
    ...who,
    secretHash: 'secretHash' in credential ? credential.secretHash : null,
    operatorTag: 'operatorToken' in credential ? operatorTag(credential.operatorToken) : null,
    tokenHash: hash(token),
    csrfToken: randomBase62(32),
    expiresAt: new Date(now + SESSION_HOURS * 3_600_000),
  });
  setCookie(c, SESSION_COOKIE, token, cookieOptions(c, SESSION_HOURS * 3600));
}

export async function endSession(
  c: Context<DashboardEnv>,
  store: Pick<DashboardStore, 'dashboard'>,
): Promise<void> {
  await store.dashboard.endSession(c.var.sessionHash);
  deleteCookie(c, SESSION_COOKIE, { path: '/dashboard', secure: overTls(c) });
}

/**
 * Resolves the session cookie to a viewer (or sends the browser to sign in), and checks the
 * session's CSRF token on every form post.
 */
export function sessionAuth(
  store: Pick<DashboardStore, 'dashboard'>,
  operatorToken: string | null,
): MiddlewareHandler<DashboardEnv> {
  const currentOperator = operatorToken ? operatorTag(operatorToken) : null;
  return async function sessionAuth(c, next) {
    const token = getCookie(c, SESSION_COOKIE);
    const tokenHash = token ? hash(token) : null;
    const s = tokenHash && (await store.dashboard.session(tokenHash, currentOperator));
    if (!s || !tokenHash) return c.redirect('/dashboard/sign-in', 303);
    let viewer: Viewer;
    if (s.kind === 'operator') viewer = { kind: 'operator', csrf: s.csrfToken };
    else if (s.kind === 'member')
      viewer = {
        kind: 'member',
        accountId: s.accountId!,
        keyId: s.keyId!,
        memberId: s.memberId!,
        csrf: s.csrfToken,
      };
    else
      viewer = {
        kind: 'admin',
        accountId: s.accountId!,
        keyId: s.keyId!,
        memberId: s.memberId,
        csrf: s.csrfToken,
      };
    if (c.req.method === 'POST') {
      const body = await readForm(c);
      if (typeof body._csrf !== 'string' || !sameSecret(body._csrf, s.csrfToken)) {
        throw new GatewayError(
          'permission_error',
          'This form has expired or did not come from this dashboard: reload the page and try again.',
        );
      }
    }
    c.set('viewer', viewer);
    c.set('sessionHash', tokenHash);
    await next();
  };
}
