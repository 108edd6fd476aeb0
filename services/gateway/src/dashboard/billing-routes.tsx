/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { portalUrl, startCheckout } from '../billing/checkout';
import { invoiceHtml } from '../billing/invoice-html';
import { cancelAtPeriodEnd, changePlan, markPaid, setTrial } from '../billing/lifecycle';
import { subscriptionView } from '../billing/view';
import { GatewayError } from '../lib/errors';
import { parseOr400 } from '../lib/validation';
import { paysThroughStripe } from './components/billing-forms';
import type { DashboardDeps, DashboardEnv } from './env';
import { billingPage } from './pages/billing';
import { operatorBillingPage } from './pages/operator-billing';
import { pageCtx, type PageResult } from './pages/page';
import { securityHeaders } from './security-headers';
import { readForm } from './form';

/** Renders a page inside the dashboard's layout (or as CSV). */
export type Render = (c: Context<DashboardEnv>, page: PageResult) => Promise<Response>;

const PlanChoice = z.object({ plan: z.string().trim().min(1).max(64) });
const UntilDay = z.object({
  account_id: z.string().trim().min(1).max(100),
  through: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date such as 2026-11-20'),
});
const DAY = 86_400_000;

const DONE: Record<string, string> = {
  'checkout:success':
    'Thank you: Stripe took the payment details. The subscription shows here as soon as Stripe confirms it (usually within seconds).',
  'checkout:canceled': 'Checkout was left without paying: nothing changed.',
  'done:plan': 'The plan is changed; the upcoming invoice shows it prorated by the day.',
  'done:cancel': 'The subscription is canceled (at the end of the period, or at once during the trial).',
};

/** The billing page and its actions: checkout, portal, plan change, cancel, printable invoices; the operator's payments. */
export function billingPages(app: Hono<DashboardEnv>, deps: DashboardDeps, render: Render): void {
  const admin = (c: Context<DashboardEnv>) => {
    const v = c.var.viewer;
    if (v.kind !== 'admin')
      throw new GatewayError('permission_error', 'Only an account admin can change billing.');
    return { accountId: v.accountId, cause: { kind: 'admin' as const, actor: v.keyId, ref: 'dashboard' } };
  };

  app.get('/billing', async (c) => {
    const v = c.var.viewer;
    if (v.kind === 'operator') {
      const [marked, trial] = [c.req.query('marked'), c.req.query('trial')];
      const s = marked || trial ? await deps.billing.store.subscriptions.get((marked ?? trial)!) : null;
      // Both dates are the midnight after the day chosen: the notice names that day.
      const through = (d: Date) => new Date(d.getTime() - 1).toISOString().slice(0, 10);
      const notice =
        marked && s?.paidUntil
          ? `Recorded: ${marked} is paid until ${through(s.paidUntil)} (end of that day, UTC).`
          : trial && s?.trialEndsAt
            ? `Set: the trial of ${trial} runs until ${through(s.trialEndsAt)} (end of that day, UTC).`
            : undefined;
      return render(c, await operatorBillingPage(deps, v.csrf, notice));
    }
    const q = c.req.query();
    const notice = DONE[`checkout:${q.checkout}`] ?? DONE[`done:${q.done}`];
    // The plan buttons post here and are redirected to Checkout or the portal, which the form-action policy must allow.
    const stripe = deps.billing.stripe;
    if (v.kind === 'admin' && stripe) {
      c.header(
        'content-security-policy',
        securityHeaders(stripe.redirectOrigins())['content-security-policy'],
      );
    }
    return render(c, await billingPage(pageCtx(c, deps), notice));
  });

  app.post('/billing/plan', async (c) => {
    const { accountId, cause } = admin(c);
    const { plan } = parseOr400(PlanChoice, await readForm(c));
    if (!deps.billing.stripe) {
      await changePlan(deps.billing, accountId, plan, cause);
      return c.redirect('/dashboard/billing?done=plan', 303);
    }
    if (paysThroughStripe(await subscriptionView(deps.billing, accountId)))
      return c.redirect(await portalUrl(deps.billing, accountId), 303);
    const session = await startCheckout(deps.billing, accountId, plan, cause);
    return c.redirect(session.url, 303);
  });

  app.post('/billing/portal', async (c) =>
    c.redirect(await portalUrl(deps.billing, admin(c).accountId), 303),
  );

  app.post('/billing/cancel', async (c) => {
    const { accountId, cause } = admin(c);
    await cancelAtPeriodEnd(deps.billing, accountId, cause);
    return c.redirect('/dashboard/billing?done=cancel', 303);
  });

  app.get('/billing/invoices/:id', async (c) => {
    const { accountId } = admin(c);
    const [invoice, account] = await Promise.all([
      deps.billing.store.invoices.get(accountId, c.req.param('id')),
      deps.store.accounts.get(accountId),
    ]);
    if (!invoice || !account)
      throw new GatewayError('not_found_error', `No invoice '${c.req.param('id')}' here.`);
    return c.html(invoiceHtml(invoice, account));
  });

  // The operator's dates (no Stripe): a payment recorded, or a trial set, through the end of a UTC day.
  for (const [path, change, done] of [
    ['mark-paid', markPaid, 'marked'],
    ['set-trial', setTrial, 'trial'],
  ] as const) {
    app.post(`/billing/${path}`, async (c) => {
      if (c.var.viewer.kind !== 'operator')
        throw new GatewayError('not_found_error', 'Only the operator records payments and sets trials.');
      const body = parseOr400(UntilDay, await readForm(c));
      const until = new Date(Date.parse(`${body.through}T00:00:00Z`) + DAY);
      await change(deps.billing, body.account_id, until, 'operator');
      return c.redirect(`/dashboard/billing?${done}=${encodeURIComponent(body.account_id)}`, 303);
    });
  }
}
