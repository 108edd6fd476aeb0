import { Hono, type Context } from 'hono';
import type { AppEnv } from '../app-env';
import { FailedAttempts } from '../auth/attempts';
import type { IssuedToken, MemberTokens } from '../identity/tokens';
import { GatewayError } from '../lib/errors';
import { OAuthError, oauthErrors } from '../lib/oauth-error';
import { requestBody } from '../lib/request-body';
import { bodyReader } from '../pipeline/body-reader';
import { BODIES } from '../pipeline/endpoint-row';

// RFC 8628 §3.4 and RFC 6749 §6 (read 2026-11-29), as Claude Code's `/login` to a gateway speaks
// them (github.com/pleaseai/shunt docs/gateway-protocol.md, read 2026-11-29): form-encoded, no
// client authentication; 400 {error} while pending, 401 invalid_grant to end a sign-in.
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const STARTS_PER_MINUTE = 20;
const BAD_TOKENS_PER_MINUTE = 30;

const clientOf = (c: Context<AppEnv>) => c.env?.incoming?.socket?.remoteAddress ?? '';

/** A refusal from the sign-in rules (identity/tokens.ts) in OAuth's words. */
function asOAuth(err: GatewayError, grant: 'device' | 'refresh'): OAuthError {
  if (err.type === 'authentication_error') return new OAuthError('invalid_grant', err.message, 401);
  if (err.type === 'permission_error') return new OAuthError('access_denied', err.message);
  if (err.type === 'rate_limit_error') return new OAuthError('slow_down', err.message, 429);
  if (err.type === 'not_found_error') return new OAuthError('invalid_request', err.message);
  if (err.type === 'invalid_request_error')
    return new OAuthError(grant === 'device' ? 'expired_token' : 'invalid_request', err.message);
  return new OAuthError('temporarily_unavailable', err.message, err.status >= 500 ? 503 : err.status);
}

const field = (form: Record<string, unknown>, name: string): string | null => {
  const v = form[name];
  return typeof v === 'string' && v.length > 0 && v.length <= 2000 ? v : null;
};

function tokenAnswer(t: IssuedToken, now: number) {
  return {
    access_token: t.token,
    token_type: 'Bearer',
    expires_in: Math.max(1, Math.floor((Date.parse(t.expires_at) - now) / 1000)),
    ...(t.refresh_token ? { refresh_token: t.refresh_token } : {}),
  };
}

/**
 * The two OAuth endpoints of a gateway sign-in for one account (`:account` in the mount path).
 * The device flow is the account's own identity provider's, relayed as `keygate token` relays
 * it (identity/tokens.ts): the person approves at the provider's verification page, and the
 * access token is a Keygate member token bound to the member and a key of theirs.
 */
export function oauthRoutes(tokens: MemberTokens, clock: () => number): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const attempts = new FailedAttempts();
  // Mounted at the account's base beside its calls: the middleware here is the OAuth paths' only.
  app.use('/oauth/*', async function accountNamed(c, next) {
    // An account id is printable ASCII: anything else (a NUL, which PostgreSQL refuses) names none.
    if (!/^[\x21-\x7e]{1,100}$/.test(c.req.param('account') ?? ''))
      throw new OAuthError('invalid_request', 'The gateway address names no account.', 404);
    await next();
  });
  app.use('/oauth/*', bodyReader(BODIES.claudeOauth));
  app.onError(oauthErrors('gateway sign-in'));
  app.use('/oauth/*', async function noStore(c, next) {
    await next();
    c.header('cache-control', 'no-store');
  });
  const account = (c: Context<AppEnv>) => c.req.param('account') ?? '';

  app.post('/oauth/device_authorization', async (c) => {
    attempts.check('device', clientOf(c), STARTS_PER_MINUTE, 'or repeated device sign-ins');
    await requestBody(c).form(); // Claude Code sends `surface=claude_code`; nothing else is asked for.
    attempts.fail('device', clientOf(c));
    let d: Awaited<ReturnType<MemberTokens['startDevice']>>;
    try {
      d = await tokens.startDevice(account(c));
    } catch (err) {
      throw err instanceof GatewayError ? asOAuth(err, 'device') : err;
    }
    return c.json({
      device_code: d.device_code,
      user_code: d.user_code,
      verification_uri: d.verification_uri,
      verification_uri_complete: d.verification_uri_complete ?? d.verification_uri,
      expires_in: d.expires_in,
      interval: d.interval,
    });
  });

  app.post('/oauth/token', async (c) => {
    attempts.check('token', clientOf(c), BAD_TOKENS_PER_MINUTE, 'device codes or refresh tokens');
    const form = await requestBody(c).form();
    const grant = field(form, 'grant_type');
    try {
      if (grant === DEVICE_GRANT) {
        const code = field(form, 'device_code');
        if (!code) throw new OAuthError('invalid_request', 'device_code: required.');
        const r = await tokens.pollDevice(account(c), code);
        if (r.status === 'pending')
          throw new OAuthError('authorization_pending', 'The sign-in is not approved yet.');
        if (r.status === 'slow_down')
          throw new OAuthError('slow_down', `Poll every ${r.interval} seconds at most.`);
        return c.json(tokenAnswer(r, clock()));
      }
      if (grant === 'refresh_token') {
        const refresh = field(form, 'refresh_token');
        if (!refresh) throw new OAuthError('invalid_request', 'refresh_token: required.');
        return c.json(tokenAnswer(await tokens.refresh(refresh), clock()));
      }
      throw new OAuthError(
        'unsupported_grant_type',
        `grant_type: '${grant ?? ''}'. This endpoint takes ${DEVICE_GRANT} and refresh_token.`,
      );
    } catch (err) {
      const refusal =
        err instanceof GatewayError ? asOAuth(err, grant === DEVICE_GRANT ? 'device' : 'refresh') : err;
      if (refusal instanceof OAuthError && ['invalid_grant', 'expired_token'].includes(refusal.code))
        attempts.fail('token', clientOf(c));
      throw refusal;
    }
  });
  return app;
}
