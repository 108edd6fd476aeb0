import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { endpointEvents, endpointUrl } from '../account-api/webhook-routes';
import { thresholds } from '../account-api/budget-routes';
import { createEndpoint } from '../alerts/endpoints';
import { createBudget, deleteBudget } from '../budgets/service';
import { GatewayError } from '../lib/errors';
import { parseOr400 } from '../lib/validation';
import type { Render } from './billing-routes';
import type { DashboardDeps, DashboardEnv } from './env';
import { budgetsPage } from './pages/budgets';
import { pageCtx } from './pages/page';
import { readForm } from './form';

const label = z
  .string()
  .trim()
  .max(100)
  .transform((s) => s || undefined);
const NewBudget = z.object({
  name: label,
  target: z
    .string()
    .regex(/^(account|user:\S+|api_key:\S+)$/, "must be 'account', 'user:<id>' or 'api_key:<id>'"),
  limit_usd: z.coerce.number().min(0).max(1_000_000_000),
  period: z.enum(['daily', 'weekly', 'monthly']),
  thresholds: z
    .string()
    .max(60)
    .transform((s) =>
      s
        .split(/[\s,%]+/)
        .filter(Boolean)
        .map(Number),
    )
    .pipe(thresholds),
  hard_cap: z.literal('on').optional(),
});
const NewEndpoint = z.object({
  url: endpointUrl,
  events: z
    .union([z.string(), z.array(z.string())])
    .transform((e) => (Array.isArray(e) ? e : [e]))
    .pipe(endpointEvents),
  description: z
    .string()
    .trim()
    .max(500)
    .transform((s) => s || null),
});
const ById = z.object({ id: z.string().trim().min(1).max(100) });

/** The budgets page and its forms (admins): create and delete budgets and alert webhook endpoints. */
export function budgetPages(app: Hono<DashboardEnv>, deps: DashboardDeps, render: Render): void {
  const admin = (c: Context<DashboardEnv>) => {
    const v = c.var.viewer;
    if (v.kind !== 'admin')
      throw new GatewayError('permission_error', 'Only an account admin can change budgets and webhooks.');
    return { accountId: v.accountId, actor: v.keyId };
  };

  app.get('/budgets', async (c) => render(c, await budgetsPage(pageCtx(c, deps))));

  app.post('/budgets', async (c) => {
    const who = admin(c);
    const b = parseOr400(NewBudget, await readForm(c));
    const [scope, targetId] =
      b.target === 'account'
        ? (['account', undefined] as const)
        : (b.target.split(':') as ['user' | 'api_key', string]);
    await createBudget(deps, who, {
      name: b.name,
      scope,
      targetId,
      limitCents: Math.round(b.limit_usd * 100),
      hardCap: b.hard_cap === 'on',
      thresholds: b.thresholds,
      period: b.period,
    });
    return c.redirect('/dashboard/budgets', 303);
  });

  app.post('/budgets/delete', async (c) => {
    const who = admin(c);
    await deleteBudget(deps, who, parseOr400(ById, await readForm(c)).id);
    return c.redirect('/dashboard/budgets', 303);
  });

  app.post('/budgets/webhooks', async (c) => {
    const who = admin(c);
    const b = parseOr400(NewEndpoint, await readForm(c, { all: true }));
    const { endpoint, secret } = await createEndpoint(deps, who, {
      url: b.url,
      events: b.events,
      description: b.description,
      errorRate: null,
    });
    return render(c, await budgetsPage(pageCtx(c, deps), { url: endpoint.url, secret }));
  });

  app.post('/budgets/webhooks/delete', async (c) => {
    const who = admin(c);
    const { id } = parseOr400(ById, await readForm(c));
    const removed = await deps.store.alerts.removeEndpoint(who.accountId, id, {
      actor: who.actor,
      action: 'webhook.delete',
      targetId: id,
    });
    if (!removed) throw new GatewayError('not_found_error', `No webhook endpoint '${id}' here.`);
    return c.redirect('/dashboard/budgets', 303);
  });
}
