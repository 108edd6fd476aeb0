import { Hono } from 'hono';
import { z } from 'zod';
import { listJson, listParams, pageQuery, parseQuery } from '../reports/query';
import type { AdminEnv, Scope } from '../admin/scope';
import { invoiceHtml } from '../billing/invoice-html';
import { invoiceJson, upcomingInvoice, upcomingJson } from '../billing/invoices';
import { cancelAtPeriodEnd, changePlan, changeSubscription, requireSubscription, type BillingDeps } from '../billing/lifecycle';
import { chargedSeats } from '../billing/proration';
import { billingOverview, catalogJson, subscriptionView } from '../billing/view';
import { GatewayError } from '../lib/errors';
import { jsonBody } from '../lib/validation';
import type { Cause } from '../store';

const PlanBody = z.strictObject({ plan: z.string().min(1).max(64) });
const CheckoutBody = z.strictObject({ plan: z.string().min(1).max(64).optional() });
const ListInvoices = z.object({ ...listParams });

/** Who acts: an admin key of the account, or the operator acting for it. */
const causeOf = (scope: Scope, ref: string): Cause => ({ kind: scope.actor.startsWith('key_') ? 'admin' : 'operator', actor: scope.actor, ref });

/** The account's plan, subscription, invoices and payment links (Stripe Checkout and portal). */
export function billingRoutes(deps: BillingDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();

  app.get('/billing/plans', async (c) => c.json({ data: (await deps.store.catalog.list()).map(catalogJson), has_more: false }));

  /** Everything the dashboard's billing page shows, in one answer. */
  app.get('/billing/overview', async (c) => c.json({ type: 'billing_overview', ...(await billingOverview(deps, c.var.scope.accountId)) }));

  app.get('/billing/subscription', async (c) => c.json(await subscriptionView(deps, c.var.scope.accountId)));

  app.get('/billing/upcoming', async (c) => c.json(upcomingJson(await upcomingInvoice(deps, c.var.scope.accountId))));

  app.post('/billing/plan', async (c) => {
    const body = await jsonBody(c, PlanBody);
    await changePlan(deps, c.var.scope.accountId, body.plan, causeOf(c.var.scope, 'plan change'));
    return c.json(await subscriptionView(deps, c.var.scope.accountId));
  });

  app.post('/billing/cancel', async (c) => {
    await cancelAtPeriodEnd(deps, c.var.scope.accountId, causeOf(c.var.scope, 'cancel'));
    return c.json(await subscriptionView(deps, c.var.scope.accountId));
  });

  app.post('/billing/checkout', async (c) => {
    const stripe = requireStripe(deps);
    const body = await jsonBody(c, CheckoutBody);
    const { accountId } = c.var.scope;
    const s = await requireSubscription(deps, accountId);
    const plan = await deps.store.catalog.get(body.plan ?? s.planId);
    if (!plan) throw new GatewayError('invalid_request_error', `plan: unknown plan '${body.plan}'.`);
    const members = await deps.store.members.countActive(accountId);
    if (plan.maxSeats !== null && members > plan.maxSeats) {
      throw new GatewayError('invalid_request_error', `plan: the ${plan.name} plan has ${plan.maxSeats} seat(s) and the account has ${members} members; remove members first.`);
    }
    const customerId = s.stripeCustomerId ?? (await linkCustomer(deps, stripe, accountId, c.var.scope));
    const session = await stripe.checkout(s, customerId, plan, chargedSeats(plan, members), deps.clock());
    return c.json({ type: 'checkout_session', id: session.id, url: session.url, plan: plan.id, seats: chargedSeats(plan, members) });
  });

  app.post('/billing/portal', async (c) => {
    const stripe = requireStripe(deps);
    const s = await requireSubscription(deps, c.var.scope.accountId);
    if (!s.stripeCustomerId) throw new GatewayError('invalid_request_error', 'This account has no Stripe customer yet: start a subscription with POST /v1/organizations/billing/checkout.');
    return c.json({ type: 'portal_session', url: await stripe.portal(s.stripeCustomerId) });
  });

  app.get('/invoices', async (c) => {
    const q = parseQuery(c, ListInvoices);
    return c.json(listJson(await deps.store.invoices.list(c.var.scope.accountId, pageQuery(q)), invoiceJson));
  });

  app.get('/invoices/:file{inv_[0-9A-Za-z]+\\.html}', async (c) => {
    const id = c.req.param('file').slice(0, -'.html'.length);
    const invoice = await deps.store.invoices.get(c.var.scope.accountId, id);
    const account = await deps.store.accounts.get(c.var.scope.accountId);
    if (!invoice || !account) throw new GatewayError('not_found_error', `No invoice with id '${id}'.`);
    return c.html(invoiceHtml(invoice, account));
  });

  app.get('/invoices/:id', async (c) => {
    const invoice = await deps.store.invoices.get(c.var.scope.accountId, c.req.param('id'));
    if (!invoice) throw new GatewayError('not_found_error', `No invoice with id '${c.req.param('id')}'.`);
    return c.json(invoiceJson(invoice));
  });

  return app;
}

function requireStripe(deps: BillingDeps) {
  if (!deps.stripe) {
    throw new GatewayError('invalid_request_error', 'Payments are not set up on this gateway (no STRIPE_SECRET_KEY): ask your Keygate operator, who records payments with `keygate account mark-paid`.');
  }
  return deps.stripe;
}

async function linkCustomer(deps: BillingDeps, stripe: NonNullable<BillingDeps['stripe']>, accountId: string, scope: Scope): Promise<string> {
  const account = await deps.store.accounts.get(accountId);
  const customerId = await stripe.createCustomer(accountId, account?.name ?? accountId);
  await changeSubscription(deps, accountId, causeOf(scope, 'stripe customer'), (s) => (s.stripeCustomerId ? null : { stripeCustomerId: customerId }));
  return customerId;
}
