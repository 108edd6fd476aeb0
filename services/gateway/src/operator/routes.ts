import { Hono } from 'hono';
import { z } from 'zod';
import { listJson, listParams, pageQuery, parseQuery } from '../reports/query';
import { organizationRoutes } from '../account-api/routes';
import { name } from '../account-api/schemas';
import type { KeyRouteDeps } from '../account-api/key-routes';
import type { AdminEnv } from '../accounts/scope';
import { accountJson, keyJson, memberJson, planJson } from '../account-api/serialize';
import { accountWithPlan, createAccount, updateAccount } from '../accounts/service';
import { REPORT_ARRAYS } from '../reports/usage-report';
import { summaryParams, usageSummary } from '../reports/usage-summary';
import { GatewayError, renderError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import { jsonBody } from '../lib/validation';
import { operatorActor, operatorAuth } from './auth';

const plan = z.enum(['solo', 'team', 'scale']);

const CreateAccount = z.strictObject({
  name,
  plan,
  provider_key: z.string().optional(),
  admin_email: z.email().optional(),
  admin_name: name.optional(),
  trial_days: z.number().int().min(0).max(365).optional(),
});

const ListAccounts = z.object({ ...listParams, search: name.optional(), status: z.enum(['active', 'suspended']).optional() });

const UpdateAccount = z
  .strictObject({ name: name.optional(), plan: plan.optional() })
  .refine((b) => b.name !== undefined || b.plan !== undefined, 'Send at least one of name and plan.');

const ProviderKey = z.strictObject({ provider_key: z.string().min(1) });

const CrossAccountUsage = summaryParams(['account', 'model', 'day'] as const);

export interface OperatorDeps extends KeyRouteDeps {
  operatorToken: string | null;
  logger?: Logger;
}

/** The operator API: whoever runs the gateway manages accounts here, and any account's data. */
export function operatorRoutes(deps: OperatorDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  app.onError((err, c) => renderError(err, c, (error, requestId) => deps.logger?.error('unhandled error', { requestId, error, stack: error.stack })));
  app.use('*', operatorAuth(deps.operatorToken));
  const actor = (c: { req: { header(name: string): string | undefined } }) => operatorActor(c.req.header('keygate-actor'));

  app.get('/plans', async (c) => c.json({ data: (await deps.store.accounts.plans()).map(planJson), has_more: false }));

  app.post('/accounts', async (c) => {
    const body = await jsonBody(c, CreateAccount);
    const created = await createAccount(deps, {
      name: body.name,
      plan: body.plan,
      providerKey: body.provider_key ?? null,
      adminEmail: body.admin_email ?? null,
      adminName: body.admin_name ?? null,
      trialDays: body.trial_days ?? null,
      actor: actor(c),
    });
    const admin = created.admin && { member: memberJson(created.admin.member), key: { ...keyJson(created.admin.key), key: created.admin.secret } };
    return c.json({ ...accountJson(created.account), admin }, 201);
  });

  app.get('/accounts', async (c) => {
    const q = parseQuery(c, ListAccounts);
    const page = await deps.store.accounts.list({ search: q.search ?? null, status: q.status ?? null }, pageQuery(q));
    return c.json(listJson(page, accountJson));
  });

  /** The cross-account view: usage totals by account, model or day. */
  app.get('/usage', async (c) => {
    const q = parseQuery(c, CrossAccountUsage, REPORT_ARRAYS);
    return c.json(await usageSummary(deps.store, null, q, deps.clock()));
  });

  /** A key by its id alone, with its account: key ids are unique across accounts. */
  app.get('/api_keys/:key_id', async (c) => {
    const key = await deps.store.keys.find(c.req.param('key_id'));
    if (!key) throw new GatewayError('not_found_error', `No API key with id '${c.req.param('key_id')}'.`);
    return c.json({ ...keyJson(key), account_id: key.accountId });
  });

  app.get('/accounts/:account_id', async (c) => {
    const { account, plan } = await accountWithPlan(deps, c.req.param('account_id'));
    const seats = await deps.store.members.countActive(account.id);
    return c.json({ ...accountJson(account), plan: planJson(plan), seats: { used: seats, max: plan.maxSeats } });
  });

  app.post('/accounts/:account_id', async (c) => {
    const body = await jsonBody(c, UpdateAccount);
    return c.json(accountJson(await updateAccount(deps, c.req.param('account_id'), body, actor(c))));
  });

  app.post('/accounts/:account_id/suspend', async (c) =>
    c.json(accountJson(await updateAccount(deps, c.req.param('account_id'), { status: 'suspended' }, actor(c)))),
  );

  app.post('/accounts/:account_id/reactivate', async (c) =>
    c.json(accountJson(await updateAccount(deps, c.req.param('account_id'), { status: 'active' }, actor(c)))),
  );

  app.post('/accounts/:account_id/provider_key', async (c) => {
    const body = await jsonBody(c, ProviderKey);
    return c.json(accountJson(await updateAccount(deps, c.req.param('account_id'), { providerKey: body.provider_key }, actor(c))));
  });

  // Everything the account API does, for any account, as the operator (or the CLI).
  app.use('/accounts/:account_id/*', async function accountScope(c, next) {
    const id = c.req.param('account_id')!;
    if (!(await deps.store.accounts.get(id))) throw new GatewayError('not_found_error', `No account with id '${id}'.`);
    c.set('scope', { accountId: id, actor: actor(c) });
    await next();
  });
  app.route('/accounts/:account_id', organizationRoutes(deps));
  return app;
}
