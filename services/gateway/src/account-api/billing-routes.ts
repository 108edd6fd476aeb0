import { Hono } from 'hono';
import { z } from 'zod';
import { listJson, listParams, pageQuery } from '../reports/query';
import type { AdminEnv, Scope } from '../accounts/scope';
import { invoiceHtml } from '../billing/invoice-html';
import { invoiceJson, upcomingInvoice, upcomingJson } from '../billing/invoices';
import { portalUrl, startCheckout } from '../billing/checkout';
import { cancelAtPeriodEnd, changePlan, type BillingDeps } from '../billing/lifecycle';
import { billingOverview, catalogJson, plansFor, subscriptionView } from '../billing/view';
import { GatewayError } from '../lib/errors';
import { operation } from '../lib/operation';
import type { Cause } from '../billing/subscription-queries';

const PlanBody = z.strictObject({ plan: z.string().min(1).max(64) });
const CheckoutBody = z.strictObject({ plan: z.string().min(1).max(64).optional() });
const ListInvoices = z.object({ ...listParams });

/** Who acts: an admin key of the account, or the operator acting for it. */
const causeOf = (scope: Scope, ref: string): Cause => ({
  kind: scope.actor.startsWith('key_') ? 'admin' : 'operator',
  actor: scope.actor,
  ref,
});

/** The account's plan, subscription, invoices and payment links (Stripe Checkout and portal). */
export function billingRoutes(deps: BillingDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const tag = 'Billing';

  app.get(
    '/billing/plans',
    operation({ tag, summary: 'The plans an account can move to, with prices and seat rules' }),
    async (c) =>
      c.json({ data: (await plansFor(deps, c.var.scope.accountId)).map(catalogJson), has_more: false }),
  );

  /** Everything the dashboard's billing page shows, in one answer. */
  const overview = operation({
    tag,
    summary:
      "Everything the dashboard's billing page shows: subscription, upcoming invoice, latest invoices, plans",
  });
  app.get('/billing/overview', overview, async (c) =>
    c.json({ type: 'billing_overview', ...(await billingOverview(deps, c.var.scope.accountId)) }),
  );

  app.get(
    '/billing/subscription',
    operation({ tag, summary: "The account's subscription: plan, state, period, seats" }),
    async (c) => c.json(await subscriptionView(deps, c.var.scope.accountId)),
  );

  app.get(
    '/billing/upcoming',
    operation({ tag, summary: 'The invoice of the current period so far, line by line' }),
    async (c) => c.json(upcomingJson(await upcomingInvoice(deps, c.var.scope.accountId))),
  );

  app.post(
    '/billing/plan',
    operation({ tag, summary: 'Move the account to another plan (prorated by the day)', body: PlanBody }),
    async (c) => {
      const body = c.req.valid('json');
      await changePlan(deps, c.var.scope.accountId, body.plan, causeOf(c.var.scope, 'plan change'));
      return c.json(await subscriptionView(deps, c.var.scope.accountId));
    },
  );

  app.post(
    '/billing/cancel',
    operation({ tag, summary: 'Cancel the subscription at the end of its period' }),
    async (c) => {
      await cancelAtPeriodEnd(deps, c.var.scope.accountId, causeOf(c.var.scope, 'cancel'));
      return c.json(await subscriptionView(deps, c.var.scope.accountId));
    },
  );

  const checkout = operation({
    tag,
    summary: 'A Stripe Checkout session to start paying (the current plan, or the one named)',
    body: CheckoutBody,
  });
  app.post('/billing/checkout', checkout, async (c) => {
    const body = c.req.valid('json');
    const session = await startCheckout(
      deps,
      c.var.scope.accountId,
      body.plan,
      causeOf(c.var.scope, 'checkout'),
    );
    return c.json({ type: 'checkout_session', ...session });
  });

  const portal = operation({
    tag,
    summary: "A Stripe customer portal session for the account's payment method",
  });
  app.post('/billing/portal', portal, async (c) =>
    c.json({ type: 'portal_session', url: await portalUrl(deps, c.var.scope.accountId) }),
  );

  app.get(
    '/invoices',
    operation({ tag, summary: 'List invoices, newest first', query: ListInvoices }),
    async (c) => {
      const q = c.req.valid('query');
      return c.json(
        listJson(await deps.store.invoices.list(c.var.scope.accountId, pageQuery(q)), invoiceJson),
      );
    },
  );

  // The printable invoice is HTML for a browser, not part of the JSON API (api-docs/openapi.ts).
  app.get('/invoices/:file{inv_[0-9A-Za-z]+\\.html}', async (c) => {
    const id = c.req.param('file').slice(0, -'.html'.length);
    const invoice = await deps.store.invoices.get(c.var.scope.accountId, id);
    const account = await deps.store.accounts.get(c.var.scope.accountId);
    if (!invoice || !account) throw new GatewayError('not_found_error', `No invoice with id '${id}'.`);
    return c.html(invoiceHtml(invoice, account));
  });

  app.get('/invoices/:id', operation({ tag, summary: 'An invoice and its lines' }), async (c) => {
    const invoice = await deps.store.invoices.get(c.var.scope.accountId, c.req.param('id'));
    if (!invoice) throw new GatewayError('not_found_error', `No invoice with id '${c.req.param('id')}'.`);
    return c.json(invoiceJson(invoice));
  });

  return app;
}
