import { Hono } from 'hono';
import { z } from 'zod';
import { listJson, listParams, pageQuery } from '../reports/query';
import { organizationRoutes } from '../account-api/routes';
import { name } from '../account-api/schemas';
import type { KeyRouteDeps } from '../account-api/key-routes';
import type { AdminEnv } from '../accounts/scope';
import { accountJson, keyJson, memberJson, planJson } from '../account-api/serialize';
import { accountWithPlan, createAccount, updateAccount } from '../accounts/service';
import { MISSING_FILTERS } from '../reports/params';
import { summaryParams, usageSummary } from '../reports/usage-summary';
import { GatewayError, renderError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import { operation } from '../lib/operation';
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

  const tag = 'Operator';
  app.get('/plans', operation({ tag, summary: 'The plans' }), async (c) => c.json({ data: (await deps.store.accounts.plans()).map(planJson), has_more: false }));

  const create = operation({ tag, summary: 'Create an account on a plan (trial started), optionally with its first admin and admin key', body: CreateAccount, status: 201 });
  app.post('/accounts', create, async (c) => {
    const body = c.req.valid('json');
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

  app.get('/accounts', operation({ tag, summary: 'List accounts', query: ListAccounts }), async (c) => {
    const q = c.req.valid('query');
    const page = await deps.store.accounts.list({ search: q.search ?? null, status: q.status ?? null }, pageQuery(q));
    return c.json(listJson(page, accountJson));
  });

  /** The cross-account view: usage totals by account, model or day. */
  const usage = operation({ tag, summary: 'Usage totals across accounts by account, model or day', query: CrossAccountUsage, refused: MISSING_FILTERS });
  app.get('/usage', usage, async (c) => {
    return c.json(await usageSummary(deps.store, null, c.req.valid('query'), deps.clock()));
  });

  /** A key by its id alone, with its account: key ids are unique across accounts. */
  app.get('/api_keys/:key_id', operation({ tag, summary: 'A key by its id alone, with its account' }), async (c) => {
    const key = await deps.store.keys.find(c.req.param('key_id'));
    if (!key) throw new GatewayError('not_found_error', `No API key with id '${c.req.param('key_id')}'.`);
    return c.json({ ...keyJson(key), account_id: key.accountId });
  });

  app.get('/accounts/:account_id', operation({ tag, summary: 'An account, its plan and seats' }), async (c) => {
    const { account, plan } = await accountWithPlan(deps, c.req.param('account_id'));
    const seats = await deps.store.members.countActive(account.id);
    return c.json({ ...accountJson(account), plan: planJson(plan), seats: { used: seats, max: plan.maxSeats } });
  });

  app.post('/accounts/:account_id', operation({ tag, summary: 'Rename an account or move it to another plan', body: UpdateAccount }), async (c) => {
    const body = c.req.valid('json');
    return c.json(accountJson(await updateAccount(deps, c.req.param('account_id'), body, actor(c))));
  });

  app.post('/accounts/:account_id/suspend', operation({ tag, summary: "Suspend an account: its keys are refused everywhere at once" }), async (c) =>
    c.json(accountJson(await updateAccount(deps, c.req.param('account_id'), { status: 'suspended' }, actor(c)))),
  );

  app.post('/accounts/:account_id/reactivate', operation({ tag, summary: 'Reactivate a suspended account' }), async (c) =>
    c.json(accountJson(await updateAccount(deps, c.req.param('account_id'), { status: 'active' }, actor(c)))),
  );

  const providerKey = operation({ tag, summary: "Set the account's provider key (stored encrypted; shown only as a hint)", body: ProviderKey });
  app.post('/accounts/:account_id/provider_key', providerKey, async (c) => {
    const body = c.req.valid('json');
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
