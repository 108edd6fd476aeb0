import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { ADMIN_KEY_PATTERN, reconcileOnDemand, saveAdminKey } from '../billing/reconcile';
import { GatewayError } from '../lib/errors';
import { parseOr400 } from '../lib/validation';
import type { Render } from './billing-routes';
import type { DashboardDeps, DashboardEnv } from './env';
import { pageCtx } from './pages/page';
import { reconciliationPage } from './pages/reconciliation';
import { readForm } from './form';

const DAY = 86_400_000;
const utcDay = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date such as 2026-11-20')
  .transform((d) => new Date(`${d}T00:00:00Z`))
  .refine((d) => !Number.isNaN(d.getTime()), 'must be a real date');
const Run = z.object({ from: utcDay, through: utcDay });
const AdminKey = z.object({
  admin_key: z
    .string()
    .trim()
    .regex(ADMIN_KEY_PATTERN, "must be a provider Admin API key ('sk-ant-admin01-…')"),
});

/** The reconciliation page (account admins): set or forget the provider Admin API key, reconcile now. */
export function reconcilePages(
  app: Hono<DashboardEnv>,
  deps: DashboardDeps & { upstreamUrl?: string },
  render: Render,
): void {
  const admin = (c: Context<DashboardEnv>) => {
    const v = c.var.viewer;
    if (v.kind !== 'admin')
      throw new GatewayError('permission_error', 'Only an account admin can reconcile with the provider.');
    return v.accountId;
  };
  // Reconciliation is billing's: its queries are billing's.
  const billed = { ...deps, store: deps.billing.store };

  app.get('/reconciliation', async (c) => render(c, await reconciliationPage(pageCtx(c, deps))));

  app.post('/reconciliation', async (c) => {
    const accountId = admin(c);
    const { from, through } = parseOr400(Run, await readForm(c));
    await reconcileOnDemand(billed, accountId, { from, to: new Date(through.getTime() + DAY) });
    return render(c, await reconciliationPage(pageCtx(c, deps), { kind: 'ran' }));
  });

  app.post('/reconciliation/admin-key', async (c) => {
    const accountId = admin(c);
    await saveAdminKey(billed, accountId, parseOr400(AdminKey, await readForm(c)).admin_key);
    return render(c, await reconciliationPage(pageCtx(c, deps), { kind: 'saved' }));
  });

  app.post('/reconciliation/admin-key/delete', async (c) => {
    await saveAdminKey(billed, admin(c), null);
    return render(c, await reconciliationPage(pageCtx(c, deps), { kind: 'forgotten' }));
  });
}
