import { Hono } from 'hono';
import { z } from 'zod';
import { billingSubject, monthlyStatement, monthOf, monthRange } from '../billing/statement';
import { GatewayError } from '../lib/errors';
import { operation } from '../lib/operation';
import { addMember, removeMember, updateMember } from '../accounts/members';
import { listJson, listParams, pageQuery } from '../reports/query';
import { name } from './schemas';
import type { AdminEnv } from '../accounts/scope';
import { planJson } from '../billing/view';
import { accountJson, memberJson, statementJson } from './serialize';
import { accountWithPlan, updateAccount, type ServiceDeps } from '../accounts/service';

const role = z.enum(['admin', 'developer']);

const ListUsers = z.object({
  ...listParams,
  email: z.string().min(1).optional(),
  status: z.enum(['active', 'removed', 'all']).default('active'),
});

const AddUser = z.strictObject({
  email: z.email(),
  name: name.optional(),
  role: role.default('developer'),
});

const UpdateUser = z
  .strictObject({ name: name.optional(), role: role.optional() })
  .refine((b) => b.name !== undefined || b.role !== undefined, 'Send at least one of name and role.');

/** The account's own settings; the operator changes its plan, status and provider key. */
const UpdateSettings = z
  .strictObject({
    time_zone: z.string().min(1).max(100).optional(),
    members_manage_own_keys: z.boolean().optional(),
  })
  .refine(
    (b) => b.time_zone !== undefined || b.members_manage_own_keys !== undefined,
    'Send at least one of time_zone and members_manage_own_keys.',
  );

const Billing = z.object({
  month: z
    .string()
    .regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'must be a month such as 2026-11')
    .optional(),
});

/** The account itself and its members (seats), in the provider's Admin API shapes. */
export function accountRoutes(deps: ServiceDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();

  const tag = 'Account and members';
  async function me(accountId: string) {
    const { account, plan } = await accountWithPlan(deps, accountId);
    const used = await deps.store.members.countActive(account.id);
    return {
      ...accountJson(account),
      plan: planJson(plan),
      in_trial: !!account.trialEndsAt && account.trialEndsAt.getTime() > deps.clock(),
      seats: { used, max: plan.maxSeats },
    };
  }

  app.get('/me', operation({ tag, summary: 'The account, its plan, trial, seats and settings' }), async (c) =>
    c.json(await me(c.var.scope.accountId)),
  );

  const settings = operation({
    tag,
    summary: "Change the account's settings: its report time zone, whether members manage their own keys",
    body: UpdateSettings,
  });
  app.post('/me', settings, async (c) => {
    const body = c.req.valid('json');
    const change = { timeZone: body.time_zone, membersManageOwnKeys: body.members_manage_own_keys };
    await updateAccount(deps, c.var.scope.accountId, change, c.var.scope.actor);
    return c.json(await me(c.var.scope.accountId));
  });

  app.get('/users', operation({ tag, summary: 'List members (seats)', query: ListUsers }), async (c) => {
    const q = c.req.valid('query');
    const page = await deps.store.members.list(
      c.var.scope.accountId,
      { status: q.status, email: q.email ?? null },
      pageQuery(q),
    );
    return c.json(listJson(page, memberJson));
  });

  app.post(
    '/users',
    operation({ tag, summary: 'Add a member (a seat, within the plan)', body: AddUser, status: 201 }),
    async (c) => {
      const body = c.req.valid('json');
      return c.json(memberJson(await addMember(deps, c.var.scope, body)), 201);
    },
  );

  app.get('/users/:id', operation({ tag, summary: 'A member' }), async (c) => {
    const member = await deps.store.members.get(c.var.scope.accountId, c.req.param('id'));
    if (!member) throw new GatewayError('not_found_error', `No member with id '${c.req.param('id')}'.`);
    return c.json(memberJson(member));
  });

  app.post(
    '/users/:id',
    operation({ tag, summary: "Change a member's name or role", body: UpdateUser }),
    async (c) => {
      const body = c.req.valid('json');
      return c.json(memberJson(await updateMember(deps, c.var.scope, c.req.param('id'), body)));
    },
  );

  app.delete(
    '/users/:id',
    operation({ tag, summary: 'Remove a member: their keys are refused at once, their usage stays theirs' }),
    async (c) => {
      const member = await removeMember(deps, c.var.scope, c.req.param('id'));
      return c.json({ id: member.id, type: 'user_deleted' as const });
    },
  );

  app.get(
    '/billing',
    operation({ tag, summary: "The month's plan statement: seat-days, trial, amount", query: Billing }),
    async (c) => {
      const q = c.req.valid('query');
      const { account, plan } = await accountWithPlan(deps, c.var.scope.accountId);
      const month = q.month ?? monthOf(deps.clock());
      const { from, to } = monthRange(month);
      const statement = monthlyStatement(await billingSubject(deps.store, account, plan, from, to), month);
      return c.json({ account_id: account.id, ...statementJson(statement) });
    },
  );

  return app;
}
