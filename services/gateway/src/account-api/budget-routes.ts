import type { Prices } from '../pricing/prices';
import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import { name } from './schemas';
import {
  createBudget,
  deleteBudget,
  getBudget,
  listBudgets,
  updateBudget,
  type BudgetWithProgress,
} from '../budgets/service';
import { operation } from '../lib/operation';
import { listJson, listParams, pageQuery } from '../reports/query';
import type { AccountStore } from '../accounts/service';

const scope = z.enum(['account', 'user', 'api_key']);
const period = z.enum(['daily', 'weekly', 'monthly']);
/** USD cents, as the provider bills tokens. */
export const limitCents = z.number().int().min(0).max(100_000_000_000);
export const thresholds = z
  .array(z.number().int().min(1).max(1000))
  .max(10)
  .transform((t) => [...new Set(t)].sort((a, b) => a - b));

const CreateBudget = z.strictObject({
  name: name.optional(),
  scope,
  target_id: z.string().min(1).optional(),
  limit_cents: limitCents,
  hard_cap: z.boolean().default(true),
  /** What a running call holds on a hard cap: what it is expected to cost, or its ceiling. */
  hold: z.enum(['expected', 'ceiling']).default('expected'),
  thresholds_percent: thresholds.default([50, 80, 100]),
  period: period.default('monthly'),
});

const UpdateBudget = z
  .strictObject({
    name: name.optional(),
    limit_cents: limitCents.optional(),
    hard_cap: z.boolean().optional(),
    hold: z.enum(['expected', 'ceiling']).optional(),
    thresholds_percent: thresholds.optional(),
    period: period.optional(),
  })
  .refine(
    (b) => Object.keys(b).length > 0,
    'Send at least one of name, limit_cents, hard_cap, thresholds_percent and period.',
  );

const ListBudgets = z.object({
  ...listParams,
  scope: scope.optional(),
  target_id: z.string().min(1).optional(),
});

export function budgetJson(b: BudgetWithProgress) {
  const p = b.progress;
  return {
    type: 'budget' as const,
    id: b.id,
    name: b.name,
    scope: b.scope,
    target_id: b.targetId,
    limit_cents: b.limitCents,
    hard_cap: b.hardCap,
    hold: b.hold ?? 'expected',
    thresholds_percent: b.thresholds,
    period: b.period,
    created_at: b.createdAt.toISOString(),
    progress: {
      spent_cents: p.spentCents,
      limit_cents: p.limitCents,
      percent: p.percent,
      period_start: p.periodStart.toISOString(),
      period_end: p.periodEnd.toISOString(),
      exhausted: p.exhausted,
      thresholds: p.thresholds.map((t) => ({
        percent: t.percent,
        crossed_at: t.crossedAt?.toISOString() ?? null,
      })),
    },
  };
}

/** Budgets of the account, its members and its keys, each with its progress this period. */
export function budgetRoutes(deps: {
  store: AccountStore;
  clock: () => number;
  prices: Prices;
}): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const tag = 'Budgets';

  app.get(
    '/budgets',
    operation({ tag, summary: 'List budgets, each with its progress this period', query: ListBudgets }),
    async (c) => {
      const q = c.req.valid('query');
      const page = await listBudgets(
        deps,
        c.var.scope.accountId,
        { scope: q.scope ?? null, targetId: q.target_id ?? null },
        pageQuery(q),
      );
      return c.json(listJson(page, budgetJson));
    },
  );

  const create = operation({
    tag,
    summary: 'Create a budget on the account, a member or a key (USD cents per period)',
    body: CreateBudget,
    status: 201,
  });
  app.post('/budgets', create, async (c) => {
    const b = c.req.valid('json');
    const created = await createBudget(deps, c.var.scope, {
      name: b.name,
      scope: b.scope,
      targetId: b.target_id,
      limitCents: b.limit_cents,
      hardCap: b.hard_cap,
      hold: b.hold,
      thresholds: b.thresholds_percent,
      period: b.period,
    });
    return c.json(budgetJson(created), 201);
  });

  app.get('/budgets/:id', operation({ tag, summary: 'A budget and its progress this period' }), async (c) =>
    c.json(budgetJson(await getBudget(deps, c.var.scope.accountId, c.req.param('id')))),
  );

  app.post(
    '/budgets/:id',
    operation({
      tag,
      summary: "Change a budget's name, limit, hard cap, thresholds or period",
      body: UpdateBudget,
    }),
    async (c) => {
      const b = c.req.valid('json');
      const patch = {
        ...(b.name !== undefined && { name: b.name }),
        ...(b.limit_cents !== undefined && { limitCents: b.limit_cents }),
        ...(b.hard_cap !== undefined && { hardCap: b.hard_cap }),
        ...(b.hold !== undefined && { hold: b.hold }),
        ...(b.thresholds_percent !== undefined && { thresholds: b.thresholds_percent }),
        ...(b.period !== undefined && { period: b.period }),
      };
      return c.json(budgetJson(await updateBudget(deps, c.var.scope, c.req.param('id'), patch)));
    },
  );

  app.delete('/budgets/:id', operation({ tag, summary: 'Delete a budget' }), async (c) => {
    const b = await deleteBudget(deps, c.var.scope, c.req.param('id'));
    return c.json({ id: b.id, type: 'budget_deleted' as const });
  });

  return app;
}
