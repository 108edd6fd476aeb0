import { Hono } from 'hono';
import { z } from 'zod';
import { listJson, listParams, pageQuery } from '../reports/query';
import { organizationRoutes } from '../account-api/routes';
import { name } from '../account-api/schemas';
import type { ScimTokens } from '../account-api/identity-routes';
import type { KeyRouteDeps } from '../account-api/key-routes';
import type { AdminEnv } from '../accounts/scope';
import { accountJson, keyJson, memberJson } from '../account-api/serialize';
import { planJson } from '../billing/view';
import { accountWithPlan, createAccount, updateAccount } from '../accounts/service';
import { MISSING_FILTERS } from '../reports/params';
import { summaryParams, usageSummary } from '../reports/usage-summary';
import { changePlan, recordSuspension, type BillingDeps } from '../billing/lifecycle';
import { plainBilling } from '../billing/setup';
import { GatewayError, renderError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import { operation } from '../lib/operation';
import { refuseNulInUrl } from '../lib/validation';
import { bodyReader } from '../pipeline/body-reader';
import { BODIES } from '../pipeline/endpoint-row';
import { operatorActor, operatorAuth } from './auth';
import { operatorBillingRoutes } from './billing-routes';
import { operatorPriceRoutes } from './price-routes';
import type { PriceBook } from '../pricing/catalog/price-book';
import type { MemberTokens } from '../identity/tokens';

const plan = z.enum(['solo', 'team', 'scale']);

const CreateAccount = z.strictObject({
  name,
  plan,
  provider_key: z.string().optional(),
  admin_email: z.email().optional(),
  admin_name: name.optional(),
  trial_days: z.number().int().min(0).max(365).optional(),
});

const ListAccounts = z.object({
  ...listParams,
  search: name.optional(),
  status: z.enum(['active', 'suspended']).optional(),
});

const UpdateAccount = z
  .strictObject({ name: name.optional(), plan: z.string().min(1).max(64).optional() })
  .refine((b) => b.name !== undefined || b.plan !== undefined, 'Send at least one of name and plan.');

const ProviderKey = z.strictObject({ provider_key: z.string().min(1) });

const CrossAccountUsage = summaryParams(['account', 'model', 'day'] as const);

export interface OperatorDeps extends KeyRouteDeps {
  operatorToken: string | null;
  logger?: Logger;
  billing?: BillingDeps;
  /** The gateway's prices (the kernel loads them), with the operator's rows. */
  prices: PriceBook;
  /** Sign-in through the account's identity provider (its settings are part of the account API). */
  identity?: MemberTokens;
  /** Identity's SCIM tokens, issued and revoked on the account API's routes. */
  scimTokens: ScimTokens;
  /** Capabilities' account-API routes (workload identity federation), served for any account here too. */
  capabilityRoutes?: readonly Hono<AdminEnv>[];
}

/** The operator API: whoever runs the gateway manages accounts here, and any account's data. */
export function operatorRoutes(deps: OperatorDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  app.onError((err, c) =>
    renderError(err, c, (error, requestId) =>
      deps.logger?.error('unhandled error', { requestId, error, stack: error.stack }),
    ),
  );
  app.use('*', bodyReader(BODIES.api));
  app.use('*', operatorAuth(deps.operatorToken));
  app.use('*', refuseNulInUrl());
  const actor = (c: { req: { header(name: string): string | undefined } }) =>
    operatorActor(c.req.header('keygate-actor'));

  const tag = 'Operator';
  const billing = deps.billing ?? plainBilling(deps.store, deps.clock);
  app.route('/', operatorBillingRoutes(billing, actor));
  app.route('/', operatorPriceRoutes(deps.prices, deps.clock, actor));

  const create = operation({
    tag,
    summary: 'Create an account on a plan (trial started), optionally with its first admin and admin key',
    body: CreateAccount,
    status: 201,
  });
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
    const admin = created.admin && {
      member: memberJson(created.admin.member),
      key: { ...keyJson(created.admin.key), key: created.admin.secret },
    };
    return c.json({ ...accountJson(created.account), admin }, 201);
  });

  app.get('/accounts', operation({ tag, summary: 'List accounts', query: ListAccounts }), async (c) => {
    const q = c.req.valid('query');
    const page = await deps.store.accounts.list(
      { search: q.search ?? null, status: q.status ?? null },
      pageQuery(q),
    );
    return c.json(listJson(page, accountJson));
  });

  /** The cross-account view: usage totals by account, model or day. */
  const usage = operation({
    tag,
    summary: 'Usage totals across accounts by account, model or day',
    query: CrossAccountUsage,
    refused: MISSING_FILTERS,
  });
  app.get('/usage', usage, async (c) => {
    return c.json(await usageSummary(deps.store, null, c.req.valid('query'), deps.clock()));
  });

  /** A key by its id alone, with its account: key ids are unique across accounts. */
  app.get(
    '/api_keys/:key_id',
    operation({ tag, summary: 'A key by its id alone, with its account' }),
    async (c) => {
      const key = await deps.store.keys.find(c.req.param('key_id'));
      if (!key) throw new GatewayError('not_found_error', `No API key with id '${c.req.param('key_id')}'.`);
      return c.json({ ...keyJson(key), account_id: key.accountId });
    },
  );

  app.get(
    '/accounts/:account_id',
    operation({ tag, summary: 'An account, its plan and seats' }),
    async (c) => {
      const { account, plan } = await accountWithPlan(deps, c.req.param('account_id'));
      const seats = await deps.store.members.countActive(account.id);
      return c.json({
        ...accountJson(account),
        plan: planJson(plan),
        seats: { used: seats, max: plan.maxSeats },
      });
    },
  );

  const update = operation({
    tag,
    summary: 'Rename an account or move it to another plan (a subscription change: seat rules, proration)',
    body: UpdateAccount,
  });
  app.post('/accounts/:account_id', update, async (c) => {
    const body = c.req.valid('json');
    const id = c.req.param('account_id');
    // A plan change is a subscription transition: seat rules, proration and the audit log follow it.
    if (body.plan)
      await changePlan(billing, id, body.plan, { kind: 'operator', actor: actor(c), ref: 'plan change' });
    if (!body.name) return c.json(accountJson((await accountWithPlan(deps, id)).account));
    return c.json(accountJson(await updateAccount(deps, id, { name: body.name }, actor(c))));
  });

  const statusSummary = {
    suspend: 'Suspend an account: its keys are refused everywhere at once',
    reactivate: 'Reactivate a suspended account',
  };
  for (const [action, status] of [
    ['suspend', 'suspended'],
    ['reactivate', 'active'],
  ] as const) {
    app.post(
      `/accounts/:account_id/${action}`,
      operation({ tag, summary: statusSummary[action] }),
      async (c) => {
        const id = c.req.param('account_id');
        // Recorded while the account is still in the state being left, so the transition names it.
        if (status === 'suspended') await recordSuspension(billing, id, true, actor(c));
        const account = await updateAccount(deps, id, { status }, actor(c));
        if (status === 'active') await recordSuspension(billing, id, false, actor(c));
        return c.json(accountJson(account));
      },
    );
  }

  const providerKey = operation({
    tag,
    summary: "Set the account's provider key (stored encrypted; shown only as a hint)",
    body: ProviderKey,
  });
  app.post('/accounts/:account_id/provider_key', providerKey, async (c) => {
    const body = c.req.valid('json');
    return c.json(
      accountJson(
        await updateAccount(deps, c.req.param('account_id'), { providerKey: body.provider_key }, actor(c)),
      ),
    );
  });

  // Everything the account API does, for any account, as the operator (or the CLI).
  app.use('/accounts/:account_id/*', async function accountScope(c, next) {
    const id = c.req.param('account_id')!;
    if (!(await deps.store.accounts.get(id)))
      throw new GatewayError('not_found_error', `No account with id '${id}'.`);
    c.set('scope', { accountId: id, actor: actor(c) });
    await next();
  });
  app.route('/accounts/:account_id', organizationRoutes(deps));
  return app;
}
