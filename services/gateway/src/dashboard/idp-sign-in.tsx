/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { Hono, type Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import {
  beginBrowserSignIn,
  CALLBACK_PATH,
  finishBrowserSignIn,
  type PendingSignIn,
} from '../identity/browser';
import type { MemberTokens } from '../identity/tokens';
import { GatewayError } from '../lib/errors';
import type { DashboardEnv } from './env';
import { overTls, SESSION_HOURS, startSession } from './session';
import type { DashboardStore } from './install';

const PENDING_COOKIE = 'kg_idp';
const PENDING_PATH = '/dashboard/sign-in/idp';

/** Where the gateway is reached: KEYGATE_PUBLIC_URL, else this request's own origin. */
function originOf(c: Context, publicUrl: string | null | undefined): string {
  if (publicUrl) return publicUrl;
  const url = new URL(c.req.url);
  return `${overTls(c) ? 'https:' : url.protocol}//${url.host}`;
}

function readPending(c: Context): PendingSignIn | null {
  const raw = getCookie(c, PENDING_COOKIE);
  if (!raw) return null;
  try {
    const p = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as PendingSignIn;
    return typeof p.account === 'string' && typeof p.state === 'string' ? p : null;
  } catch {
    return null;
  }
}

/**
 * "Sign in with <provider>": the authorization code flow with PKCE, state and nonce, through
 * openid-client. The pending sign-in rides in an HttpOnly cookie scoped to these two paths,
 * SameSite=Lax so it comes back on the provider's redirect (a top-level cross-site GET).
 */
export function idpSignInRoutes(
  deps: { store: Pick<DashboardStore, 'dashboard'>; clock: () => number },
  tokens: MemberTokens,
) {
  const app = new Hono<DashboardEnv>();

  app.get('/sign-in/idp', async (c) => {
    const account = c.req.query('account')?.trim();
    if (!account) throw new GatewayError('invalid_request_error', 'account: give your Keygate account id.');
    const { url, pending } = await beginBrowserSignIn(tokens, account, originOf(c, tokens.deps.publicUrl));
    setCookie(c, PENDING_COOKIE, Buffer.from(JSON.stringify(pending)).toString('base64url'), {
      path: PENDING_PATH,
      httpOnly: true,
      secure: overTls(c),
      sameSite: 'Lax',
      maxAge: 600,
    });
    return c.redirect(url.href, 302);
  });

  app.get('/sign-in/idp/callback', async (c) => {
    const pending = readPending(c);
    deleteCookie(c, PENDING_COOKIE, { path: PENDING_PATH, secure: overTls(c) });
    if (!pending)
      throw new GatewayError(
        'authentication_error',
        'This sign-in was not started from this browser, or took longer than 10 minutes: start it again.',
      );
    const here = new URL(c.req.url);
    const current = new URL(`${originOf(c, tokens.deps.publicUrl)}${CALLBACK_PATH}${here.search}`);
    const { member, keyId, secretHash } = await finishBrowserSignIn(
      tokens,
      pending,
      current,
      SESSION_HOURS * 3_600_000,
    );
    await startSession(
      c,
      deps.store,
      {
        kind: member.role === 'admin' ? 'admin' : 'member',
        accountId: member.accountId,
        memberId: member.id,
        keyId,
      },
      deps.clock(),
      { secretHash },
    );
    // A page of this origin moves on, not a redirect: the session cookie is SameSite=Strict, and a
    // redirect chain that began at the provider would not carry it.
    return c.html(
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta http-equiv="refresh" content="0;url=/dashboard" />
          <title>Signed in</title>
        </head>
        <body>
          <p>
            Signed in as {member.email}. <a href="/dashboard">Continue to the dashboard</a>.
          </p>
        </body>
      </html>,
    );
  });
  return app;
}
