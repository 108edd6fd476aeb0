import type Stripe from 'stripe';
import { changeSubscription, type BillingDeps } from './lifecycle';
import { patchFromStripe, stripeId, type StripeBilling } from './stripe';

export type WebhookOutcome = 'applied' | 'duplicate' | 'ignored';

const SUBSCRIPTION_EVENTS = new Set([
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'customer.subscription.trial_will_end',
  'customer.subscription.paused',
  'customer.subscription.resumed',
]);

/**
 * Applies one verified Stripe event, once: the event id is recorded in the transaction that
 * applies it, so a duplicate or a replay changes nothing. Events may arrive out of order;
 * one older than the last applied for the account, and every event that only names the
 * subscription (checkout, invoices), is applied from the subscription as Stripe has it now.
 */
export async function applyStripeEvent(
  deps: BillingDeps & { stripe: StripeBilling },
  event: Stripe.Event,
): Promise<WebhookOutcome> {
  if (await deps.store.subscriptions.eventSeen(event.id)) return 'duplicate';
  const eventAt = new Date(event.created * 1000);
  const target = await locate(deps, event);
  if (!target) {
    await deps.store.subscriptions.recordEvent(event.id, event.type, null);
    return 'ignored';
  }
  const { accountId, subscriptionId } = target;
  const current = await deps.store.subscriptions.get(accountId);
  if (!current) return 'ignored';
  let sub = SUBSCRIPTION_EVENTS.has(event.type) ? (event.data.object as Stripe.Subscription) : null;
  const stale = !!current.stripeEventAt && eventAt < current.stripeEventAt;
  if ((!sub || stale) && subscriptionId) sub = await deps.stripe.retrieveSubscription(subscriptionId);
  const priceId = sub?.items.data[0]?.price.id ?? null;
  const plan =
    (priceId && (await deps.store.catalog.byStripePrice(priceId))) ||
    (sub?.metadata?.plan ? await deps.store.catalog.get(sub.metadata.plan) : null);
  const failed = event.type === 'invoice.payment_failed';

  const result = await changeSubscription(
    deps,
    accountId,
    { kind: 'webhook', actor: 'stripe', ref: event.id },
    (s) => {
      const customerId =
        stripeId((event.data.object as { customer?: string | { id: string } | null }).customer) ??
        s.stripeCustomerId;
      if (!sub) return { stripeCustomerId: customerId };
      const patch = patchFromStripe(s, sub, plan?.id ?? null, eventAt);
      // A failed payment Stripe has not yet reflected in the subscription still starts the grace period.
      if (failed && patch.state === 'active')
        Object.assign(patch, { state: 'past_due', pastDueSince: s.pastDueSince ?? eventAt });
      return patch;
    },
    { id: event.id, type: event.type },
  );
  if (!result) return 'duplicate';

  if (event.type === 'invoice.paid') {
    const invoice = event.data.object as Stripe.Invoice;
    await deps.store.invoices.markPaid(
      accountId,
      new Date(deps.clock()),
      new Date(deps.clock()),
      invoice.id ?? null,
    );
  }
  if (event.type === 'customer.subscription.trial_will_end' && sub?.trial_end) {
    const end = new Date(sub.trial_end * 1000);
    await deps.store.invoices.notice({
      accountId,
      kind: 'trial_will_end',
      dueAt: end,
      message: `The free trial ends on ${end.toISOString().slice(0, 10)}. Check the payment method on the billing page (/dashboard/billing).`,
    });
  }
  return 'applied';
}

/** The account and Stripe subscription an event is about: by our metadata, else by the ids we stored. */
async function locate(
  deps: BillingDeps,
  event: Stripe.Event,
): Promise<{ accountId: string; subscriptionId: string | null } | null> {
  let accountId: string | null = null;
  let subscriptionId: string | null = null;
  let customerId: string | null = null;
  if (event.type === 'checkout.session.completed') {
    const session = event.data.object as Stripe.Checkout.Session;
    accountId = session.client_reference_id ?? session.metadata?.account_id ?? null;
    subscriptionId = stripeId(session.subscription);
    customerId = stripeId(session.customer);
  } else if (SUBSCRIPTION_EVENTS.has(event.type)) {
    const sub = event.data.object as Stripe.Subscription;
    accountId = sub.metadata?.account_id ?? null;
    subscriptionId = sub.id;
    customerId = stripeId(sub.customer);
  } else if (event.type === 'invoice.paid' || event.type === 'invoice.payment_failed') {
    const invoice = event.data.object as Stripe.Invoice;
    subscriptionId = stripeId(invoice.parent?.subscription_details?.subscription);
    accountId = invoice.parent?.subscription_details?.metadata?.account_id ?? null;
    customerId = stripeId(invoice.customer);
  } else {
    return null;
  }
  accountId ??= await deps.store.subscriptions.accountForStripe(customerId, subscriptionId);
  return accountId ? { accountId, subscriptionId } : null;
}
