import { Hono } from 'hono';
import { z } from 'zod';
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env';
import { FailedAttempts } from '../auth/attempts';
import { GatewayError } from '../lib/errors';
import type { MemberTokens } from '../identity/tokens';
import { operation } from '../lib/operation';

const accountId = z.string().trim().min(1).max(100);
const StartDevice = z.strictObject({ account_id: accountId });
const PollDevice = z.strictObject({ account_id: accountId, device_code: z.string().min(1).max(2000) });
const Refresh = z.strictObject({ refresh_token: z.string().min(1).max(200) });

/** Per client address and minute: device sign-ins started (each makes Keygate call a provider), refresh tokens and device codes refused. */
const STARTS_PER_MINUTE = 20;
const BAD_REFRESHES_PER_MINUTE = 30;
const BAD_POLLS_PER_MINUTE = 30;

const clientOf = (c: Context<AppEnv>) => c.env?.incoming?.socket?.remoteAddress ?? '';

/**
 * What `keygate token` talks to (`/idp/v1/…`, no key: the identity provider is the credential).
 * Keygate holds the client secret and runs the device flow at the provider for the helper.
 */
export function deviceRoutes(tokens: MemberTokens): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const tag = 'Sign-in';
  const attempts = new FailedAttempts();
  // Before the body is read (operation() reads it): a client past its budget costs no read.
  const limited =
    (kind: string, budget: number, what: string): MiddlewareHandler<AppEnv> =>
    async (c, next) => {
      attempts.check(kind, clientOf(c), budget, what);
      await next();
    };
  // no-store: these answers carry tokens (RFC 6749 §5.1).
  app.use('*', async function noStore(c, next) {
    await next();
    c.header('cache-control', 'no-store');
  });

  app.post(
    '/device/code',
    limited('device', STARTS_PER_MINUTE, 'or repeated device sign-ins'),
    operation({
      tag,
      summary: "Start the device authorization flow at the account's identity provider (RFC 8628 §3.1)",
      body: StartDevice,
    }),
    async (c) => {
      attempts.fail('device', clientOf(c));
      return c.json(await tokens.startDevice(c.req.valid('json').account_id));
    },
  );

  app.post(
    '/device/token',
    operation({
      tag,
      summary:
        'Poll the device flow: `pending`, `slow_down` (polled sooner than the interval: the provider is not asked), or a short-lived member token and a refresh token',
      body: PollDevice,
    }),
    async (c) => {
      const b = c.req.valid('json');
      // Each poll of a code Keygate has not seen may reach the provider once: guessed codes are cut off.
      attempts.check('poll', clientOf(c), BAD_POLLS_PER_MINUTE, 'device codes');
      try {
        return c.json(await tokens.pollDevice(b.account_id, b.device_code));
      } catch (err) {
        if (err instanceof GatewayError && err.type === 'invalid_request_error')
          attempts.fail('poll', clientOf(c));
        throw err;
      }
    },
  );

  app.post(
    '/token',
    limited('refresh', BAD_REFRESHES_PER_MINUTE, 'refresh tokens'),
    operation({
      tag,
      summary:
        'A new member token and a new refresh token (the one sent is spent), after the identity provider renewed the sign-in (it refuses a disabled person)',
      body: Refresh,
    }),
    async (c) => {
      try {
        return c.json(await tokens.refresh(c.req.valid('json').refresh_token));
      } catch (err) {
        if (err instanceof GatewayError && err.type === 'authentication_error')
          attempts.fail('refresh', clientOf(c));
        throw err;
      }
    },
  );
  return app;
}
