import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import { effectiveReport } from '../budgets/effective';
import { GatewayError } from '../lib/errors';
import { operation } from '../lib/operation';
import { cursorJson, cursorParams, cursorQuery, pageOf } from './cursor';
import { type Deps, increaseJson, resolveIncrease, spendLimitJson, summaryJson } from './spend-limit-json';

const period = z.enum(['daily', 'weekly', 'monthly']);
const cents = z
  .string()
  .regex(/^\d{1,12}$/, 'a non-negative integer string of cents, such as "50000" for $500.00');
const Scope = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('organization') }),
  z.strictObject({ type: z.literal('user'), user_id: z.string().min(1) }),
  z.strictObject({ type: z.literal('rbac_group'), rbac_group_id: z.string().min(1) }),
  z.strictObject({ type: z.literal('workspace'), workspace_id: z.string().min(1) }),
]);
const SetLimit = z.strictObject({
  amount: cents.nullable(),
  scope: Scope,
  period: period.default('monthly'),
  /** Keygate: what a running call holds on the limit, its expected cost (default) or its ceiling. */
  hold: z.enum(['expected', 'ceiling']).default('expected'),
});
const ListLimits = z.object({
  ...cursorParams,
  scope_type: z
    .array(
      z.enum([
        'organization',
        'rbac_group',
        'user',
        'seat_tier',
        'organization_service',
        'usage_tier',
        'workspace',
      ]),
    )
    .max(100)
    .optional(),
});
const Effective = z.object({
  ...cursorParams,
  period: z.array(period).optional(),
  user_ids: z.array(z.string().min(1)).max(100).optional(),
});
const ListRequests = z.object({
  ...cursorParams,
  status: z.array(z.enum(['pending', 'approved', 'denied'])).optional(),
  actor_ids: z.array(z.string().min(1)).max(100).optional(),
});
const Approve = z.strictObject({
  amount: cents,
  period: period.nullable().optional(),
  suppress_notification: z.boolean().optional(),
});
const Deny = z.strictObject({ suppress_notification: z.boolean().optional() });

/** Spend limits: the provider's face of Keygate's hard-capped budgets (one engine enforces both). */
export function spendLimitRoutes(deps: Deps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const { store } = deps;
  const tag = 'Spend limits';

  app.get('/spend_limits', operation({ tag, summary: 'List spend limits', query: ListLimits }), async (c) => {
    const q = c.req.valid('query');
    const all = (await store.spendLimits.ofAccount(c.var.scope.accountId)).filter(
      (l) => !q.scope_type || q.scope_type.includes(l.scopeType),
    );
    return c.json(
      cursorJson(
        pageOf(all, q, (l) => l.id),
        spendLimitJson,
        (l) => l.id,
      ),
    );
  });

  app.post(
    '/spend_limits',
    operation({ tag, summary: 'Set a spend limit: an upsert keyed on scope and period', body: SetLimit }),
    async (c) => {
      const b = c.req.valid('json');
      const { accountId, actor } = c.var.scope;
      if (b.scope.type === 'workspace')
        throw new GatewayError(
          'invalid_request_error',
          'scope: Keygate has no workspaces; set an organization, rbac_group or user limit.',
        );
      let scopeId = accountId;
      if (b.scope.type === 'user') {
        const m = await store.members.get(accountId, b.scope.user_id);
        if (m?.status !== 'active')
          throw new GatewayError('not_found_error', `scope.user_id: no active member '${b.scope.user_id}'.`);
        scopeId = m.id;
      } else if (b.scope.type === 'rbac_group') {
        const g = await store.rbacGroups.get(accountId, b.scope.rbac_group_id);
        if (!g)
          throw new GatewayError(
            'not_found_error',
            `scope.rbac_group_id: no RBAC group '${b.scope.rbac_group_id}'.`,
          );
        scopeId = g.id;
      }
      const limit = await store.spendLimits.set(
        {
          accountId,
          scopeType: b.scope.type,
          scopeId,
          period: b.period,
          amountCents: b.amount === null ? null : Number(b.amount),
          hold: b.hold,
        },
        actor,
      );
      return c.json(spendLimitJson(limit));
    },
  );

  app.get(
    '/spend_limits/effective',
    operation({
      tag,
      summary: "Each member's effective limit per period and spend to date",
      query: Effective,
    }),
    async (c) => {
      const q = c.req.valid('query');
      const rows = await effectiveReport(deps, c.var.scope.accountId, {
        memberIds: q.user_ids ?? null,
        periods: q.period ?? null,
      });
      // Pages by member, so a member's periods never split across pages.
      const members = [...new Set(rows.map((r) => r.principalId))];
      const page = pageOf(members, q, (m) => m);
      const shown = new Set(page.rows);
      return c.json({
        data: rows.filter((r) => shown.has(r.principalId)).map(summaryJson),
        next_page: page.hasMore ? (page.rows.at(-1) ?? null) : null,
      });
    },
  );

  app.get('/spend_limits/:id', operation({ tag, summary: 'A spend limit' }), async (c) => {
    const l = await store.spendLimits.get(c.var.scope.accountId, c.req.param('id'));
    if (!l) throw new GatewayError('not_found_error', `No spend limit with id '${c.req.param('id')}'.`);
    return c.json(spendLimitJson(l));
  });

  app.delete('/spend_limits/:id', operation({ tag, summary: 'Delete a spend limit' }), async (c) => {
    const { accountId, actor } = c.var.scope;
    const l = await store.spendLimits.remove(accountId, c.req.param('id'), {
      actor,
      action: 'spend_limit.delete',
      targetId: c.req.param('id'),
    });
    if (!l) throw new GatewayError('not_found_error', `No spend limit with id '${c.req.param('id')}'.`);
    return c.json({ id: l.id, type: 'spend_limit_deleted' as const });
  });

  const rtag = 'Spend limit increase requests';
  app.get(
    '/spend_limit_increase_requests',
    operation({ tag: rtag, summary: 'List increase requests, most recent first', query: ListRequests }),
    async (c) => {
      const q = c.req.valid('query');
      const page = await store.spendLimits.listRequests(
        c.var.scope.accountId,
        { status: q.status ?? null, memberIds: q.actor_ids ?? null },
        cursorQuery(q),
      );
      const data = await Promise.all(page.rows.map((r) => increaseJson(deps, r)));
      return c.json({
        ...cursorJson(
          page,
          (r) => r.id,
          (r) => r.id,
        ),
        data,
      });
    },
  );
  app.get(
    '/spend_limit_increase_requests/:id',
    operation({ tag: rtag, summary: 'An increase request' }),
    async (c) => {
      const r = await store.spendLimits.getRequest(c.var.scope.accountId, c.req.param('id'));
      if (!r)
        throw new GatewayError(
          'not_found_error',
          `No spend limit increase request with id '${c.req.param('id')}'.`,
        );
      return c.json(await increaseJson(deps, r));
    },
  );
  app.post(
    '/spend_limit_increase_requests/:id/approve',
    operation({ tag: rtag, summary: "Approve: writes the member's own limit at amount", body: Approve }),
    async (c) => {
      const b = c.req.valid('json');
      const out = await resolveIncrease(deps, c.var.scope, c.req.param('id'), {
        status: 'approved',
        amountCents: Number(b.amount),
        period: b.period ?? null,
      });
      return c.json({
        ...(await increaseJson(deps, out.request)),
        spend_limit: out.limit ? spendLimitJson(out.limit) : null,
      });
    },
  );
  app.post(
    '/spend_limit_increase_requests/:id/deny',
    operation({ tag: rtag, summary: 'Deny a pending request', body: Deny, optionalBody: true }),
    async (c) => {
      const out = await resolveIncrease(deps, c.var.scope, c.req.param('id'), { status: 'denied' });
      return c.json(await increaseJson(deps, out.request));
    },
  );
  return app;
}
