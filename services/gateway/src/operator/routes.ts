import { timingSafeEqual } from 'node:crypto';
import { Hono, type MiddlewareHandler } from 'hono';
import { z } from 'zod';
import { accountJson, keyJson, memberJson } from '../admin/serialize';
import { createAccount, createKey, type ServiceDeps } from '../admin/service';
import type { AppEnv } from '../app-env';
import { presentedCredential } from '../lib/credentials';
import { GatewayError, renderError } from '../lib/errors';
import { jsonBody } from '../lib/validation';

const CreateAccount = z.strictObject({
  name: z.string().trim().min(1).max(200),
  plan: z.enum(['solo', 'team', 'scale']),
  provider_key: z.string().optional(),
  admin_email: z.email().optional(),
  admin_name: z.string().trim().min(1).max(200).optional(),
});

const CreateKey = z.strictObject({
  kind: z.enum(['live', 'test', 'admin']).default('live'),
  name: z.string().trim().min(1).max(200).optional(),
  member_id: z.string().optional(),
  app: z.string().trim().min(1).max(100).optional(),
  environment: z.string().trim().min(1).max(100).optional(),
});

export function operatorAuth(token: string | null): MiddlewareHandler<AppEnv> {
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

/** The operator API: whoever runs the gateway creates and manages accounts here. */
export function operatorRoutes(deps: ServiceDeps & { operatorToken: string | null }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.onError(renderError);
  app.use('*', operatorAuth(deps.operatorToken));

  app.post('/accounts', async (c) => {
    const body = await jsonBody(c, CreateAccount);
    const created = await createAccount(deps, {
      name: body.name,
      plan: body.plan,
      providerKey: body.provider_key ?? null,
      adminEmail: body.admin_email ?? null,
      adminName: body.admin_name ?? null,
    });
    return c.json(
      {
        ...accountJson(created.account),
        admin: created.admin && { member: memberJson(created.admin.member), key: { ...keyJson(created.admin.key), key: created.admin.secret } },
      },
      201,
    );
  });

  app.get('/accounts/:id', async (c) => {
    const account = await deps.store.accounts.get(c.req.param('id'));
    if (!account) throw new GatewayError('not_found_error', `No account '${c.req.param('id')}'.`);
    return c.json(accountJson(account));
  });

  app.post('/accounts/:id/keys', async (c) => {
    const account = await deps.store.accounts.get(c.req.param('id'));
    if (!account) throw new GatewayError('not_found_error', `No account '${c.req.param('id')}'.`);
    const body = await jsonBody(c, CreateKey);
    const { key, secret } = await createKey(deps, {
      accountId: account.id,
      kind: body.kind,
      name: body.name ?? null,
      memberId: body.member_id ?? null,
      app: body.app ?? null,
      environment: body.environment ?? null,
      createdBy: 'operator',
    });
    return c.json({ ...keyJson(key), key: secret }, 201);
  });

  return app;
}
