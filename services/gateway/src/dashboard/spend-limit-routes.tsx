import type { Hono } from 'hono';
import { z } from 'zod';
import { resolveIncrease } from '../account-api/spend-limit-json';
import { GatewayError } from '../lib/errors';
import { parseOr400 } from '../lib/validation';
import type { Render } from './billing-routes';
import type { DashboardDeps, DashboardEnv } from './env';
import { pageCtx } from './pages/page';
import { spendLimitsPage } from './pages/spend-limits';
import { readForm } from './form';

const period = z.enum(['daily', 'weekly', 'monthly']);
const usdCents = z.coerce
  .number()
  .min(0)
  .max(1_000_000_000)
  .transform((d) => Math.round(d * 100));
const Ask = z.object({
  period,
  amount_usd: usdCents,
  reason: z
    .string()
    .trim()
    .max(500)
    .transform((s) => s || null),
});
const Approve = z.object({ id: z.string().trim().min(1).max(100), amount_usd: usdCents });
const ById = z.object({ id: z.string().trim().min(1).max(100) });

/** The spend-limits page: a member asks for a higher limit; an admin approves or denies. */
export function spendLimitPages(app: Hono<DashboardEnv>, deps: DashboardDeps, render: Render): void {
  app.get('/spend-limits', async (c) => render(c, await spendLimitsPage(pageCtx(c, deps))));

  app.post('/spend-limits/request', async (c) => {
    const v = c.var.viewer;
    if (v.kind !== 'member' && !(v.kind === 'admin' && v.memberId && !v.readOnly))
      throw new GatewayError('permission_error', 'Only a member can ask for a higher limit of their own.');
    const b = parseOr400(Ask, await readForm(c));
    await deps.store.spendLimits.request({
      accountId: v.accountId,
      memberId: v.memberId!,
      period: b.period,
      requestedCents: b.amount_usd,
      reason: b.reason,
    });
    return c.redirect('/dashboard/spend-limits', 303);
  });

  const admin = (v: DashboardEnv['Variables']['viewer']) => {
    if (v.kind !== 'admin' || v.readOnly)
      throw new GatewayError('permission_error', 'Only an account admin can approve or deny a request.');
    return { accountId: v.accountId, actor: v.keyId };
  };
  app.post('/spend-limits/approve', async (c) => {
    const who = admin(c.var.viewer);
    const b = parseOr400(Approve, await readForm(c));
    await resolveIncrease(deps, who, b.id, { status: 'approved', amountCents: b.amount_usd, period: null });
    return c.redirect('/dashboard/spend-limits', 303);
  });
  app.post('/spend-limits/deny', async (c) => {
    const who = admin(c.var.viewer);
    await resolveIncrease(deps, who, parseOr400(ById, await readForm(c)).id, { status: 'denied' });
    return c.redirect('/dashboard/spend-limits', 303);
  });
}
