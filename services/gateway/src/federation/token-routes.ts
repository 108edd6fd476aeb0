import { Hono, type Context } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../app-env';
import { FailedAttempts } from '../auth/attempts';
import { parseOr400 } from '../lib/validation';
import { bodyReader } from '../pipeline/body-reader';
import { BODIES } from '../pipeline/endpoint-row';
import { requestBody } from '../lib/request-body';
import type { WorkloadExchange } from './exchange';
import { OAuthError, oauthErrors } from '../lib/oauth-error';

// RFC 7523 §2.1 (read 2026-11-29): grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer and one
// `assertion`, sent as a form (RFC 6749 §4.5); the provider's SDK sends the same fields as JSON with
// `federation_rule_id` and `organization_id` (platform.claude.com/docs/en/manage-claude/wif-reference,
// read 2026-11-29). Both are taken. Answers: RFC 6749 §5.1 and §5.2.
export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/** Refused exchanges one client address may make per minute; past them it is refused before its body is read. */
const REFUSALS_PER_MINUTE = 60;

const id = z.string().trim().min(1).max(100);
const TokenRequest = z.object({
  grant_type: z.string().max(200),
  assertion: z
    .string()
    .min(1)
    .max(16 * 1024),
  federation_rule_id: id.optional(),
  organization_id: id.optional(),
  service_account_id: id.optional(),
});

const clientOf = (c: Context<AppEnv>) => c.env?.incoming?.socket?.remoteAddress ?? '';

/** `POST /v1/oauth/token`: no key; the assertion is the credential. */
export function tokenRoutes(exchange: WorkloadExchange): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const attempts = new FailedAttempts();
  app.onError(oauthErrors('token exchange'));
  app.post(
    '/v1/oauth/token',
    async function perAddress(c, next) {
      attempts.check('oauth-token', clientOf(c), REFUSALS_PER_MINUTE, 'token exchanges');
      await next();
      if (c.res.status >= 400) attempts.fail('oauth-token', clientOf(c));
    },
    bodyReader(BODIES.workloadToken),
    async (c) => {
      const type = c.req.header('content-type') ?? '';
      const raw = type.startsWith('application/json')
        ? await requestBody(c).json()
        : await requestBody(c).form();
      const fields = parseFields(raw);
      if (fields.grant_type !== JWT_BEARER)
        throw new OAuthError('unsupported_grant_type', `grant_type must be ${JWT_BEARER}.`);
      if (!fields.federation_rule_id && !fields.organization_id)
        throw new OAuthError(
          'invalid_request',
          'Send federation_rule_id or organization_id with the assertion.',
        );
      const token = await exchange.exchange({
        assertion: fields.assertion,
        federationRuleId: fields.federation_rule_id ?? null,
        organizationId: fields.organization_id ?? null,
        serviceAccountId: fields.service_account_id ?? null,
      });
      return c.json(token, 200, { 'cache-control': 'no-store', pragma: 'no-cache' });
    },
  );
  return app;
}

function parseFields(raw: unknown): z.output<typeof TokenRequest> {
  try {
    return parseOr400(TokenRequest, raw);
  } catch (err) {
    throw new OAuthError('invalid_request', (err as Error).message);
  }
}
