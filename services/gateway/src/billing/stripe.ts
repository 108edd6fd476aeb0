import type Stripe from 'stripe';
import { GatewayError } from '../lib/errors';
import type { CatalogPlan } from './catalog-queries';
import type { SubscriptionPatch, SubscriptionRecord, SubscriptionState } from './subscription-queries';
import { BILLING_PAGE } from './standing';

export interface StripeSettings {
  secretKey: string;
  webhookSecret: string;
  /** Where Checkout and the portal send the customer back (the gateway's public URL, known once it listens). */
  publicUrl: () => string;
  /** Overrides for tests, which point the library at a stand-in on loopback. */
  host?: string | null;
  port?: number | null;
  protocol?: 'http' | 'https' | null;
}

const DAY_S = 86_400;

/** Stripe's library is loaded only where Stripe is configured: it is the heaviest module of the gateway to load. */
export async function connectStripe(settings: StripeSettings): Promise<StripeBilling> {
  const { default: Stripe } = await import('stripe');
  const client = new Stripe(settings.secretKey, {
    maxNetworkRetries: 1,
    timeout: 20_000,
    ...(settings.host ? { host: settings.host } : {}),
    ...(settings.port ? { port: settings.port } : {}),
    ...(settings.protocol ? { protocol: settings.protocol } : {}),
    appInfo: { name: 'keygate' },
  });
  return new StripeBilling(settings, client);
}

/** Stripe through its official library: Checkout, the customer portal, subscriptions, webhook signatures. */
export class StripeBilling {
  readonly client: Stripe;
  readonly #settings: StripeSettings;

  constructor(settings: StripeSettings, client: Stripe) {
    this.#settings = settings;
    this.client = client;
  }

  /** Where Checkout and the portal live, for the billing page's form-action policy (the stand-in's origin when overridden). */
  redirectOrigins(): string[] {
    const { host, port, protocol } = this.#settings;
    if (!host) return ['https://checkout.stripe.com', 'https://billing.stripe.com'];
    return [`${protocol ?? 'https'}://${host}${port ? `:${port}` : ''}`];
  }

  async createCustomer(accountId: string, name: string): Promise<string> {
    const customer = await this.client.customers.create(
      { name, metadata: { account_id: accountId } },
      { idempotencyKey: `keygate-customer-${accountId}` },
    );
    return customer.id;
  }

  /** A Checkout session that starts (or restarts) the subscription on `plan` for `seats` seats; the trial carries over. */
  async checkout(
    s: SubscriptionRecord,
    customerId: string,
    plan: CatalogPlan,
    seats: number,
    now: number,
  ): Promise<{ id: string; url: string }> {
    if (!plan.stripePriceId) {
      throw new GatewayError(
        'invalid_request_error',
        `The ${plan.name} plan has no Stripe price yet: the operator sets it with \`keygate plan update --plan ${plan.id} --stripe-price price_…\`.`,
      );
    }
    const trialEnd = s.trialEndsAt ? Math.floor(s.trialEndsAt.getTime() / 1000) : 0;
    const session = await this.client.checkout.sessions.create({
      mode: 'subscription',
      customer: customerId,
      client_reference_id: s.accountId,
      line_items: [{ price: plan.stripePriceId, quantity: seats }],
      subscription_data: {
        metadata: { account_id: s.accountId, plan: plan.id },
        // Stripe takes a trial end at least two days ahead; a shorter rest of the trial is simply not carried over.
        ...(s.state === 'trialing' && trialEnd > now / 1000 + 2 * DAY_S ? { trial_end: trialEnd } : {}),
      },
      success_url: `${this.#settings.publicUrl()}${BILLING_PAGE}?checkout=success`,
      cancel_url: `${this.#settings.publicUrl()}${BILLING_PAGE}?checkout=canceled`,
    });
    if (!session.url)
      throw new GatewayError('api_error', 'Stripe answered a Checkout session without a URL.');
    return { id: session.id, url: session.url };
  }

  async portal(customerId: string): Promise<string> {
    const session = await this.client.billingPortal.sessions.create({
      customer: customerId,
      return_url: `${this.#settings.publicUrl()}${BILLING_PAGE}`,
    });
    return session.url;
  }

  retrieveSubscription(id: string): Promise<Stripe.Subscription> {
    return this.client.subscriptions.retrieve(id);
  }

  /** Verifies the signature over the raw body; throws a 400 without reading anything else. */
  async verify(rawBody: Buffer, signature: string | undefined): Promise<Stripe.Event> {
    if (!signature) throw new GatewayError('invalid_request_error', 'Missing Stripe-Signature header.');
    try {
      return await this.client.webhooks.constructEventAsync(rawBody, signature, this.#settings.webhookSecret);
    } catch {
      throw new GatewayError('invalid_request_error', 'Invalid Stripe signature: the event was not applied.');
    }
  }
}

const STATES: Record<string, SubscriptionState> = {
  trialing: 'trialing',
  active: 'active',
  past_due: 'past_due',
  unpaid: 'unpaid',
  canceled: 'canceled',
  paused: 'paused',
  incomplete: 'incomplete',
  incomplete_expired: 'canceled',
};

const idOf = (v: string | { id: string } | null | undefined) => (typeof v === 'string' ? v : (v?.id ?? null));

/**
 * The subscription as Stripe has it, as a patch of ours. An operator's suspension stays in
 * force (Stripe's state waits as the state to resume); seats stay the members' count.
 */
export function patchFromStripe(
  current: SubscriptionRecord,
  sub: Stripe.Subscription,
  planId: string | null,
  eventAt: Date,
): SubscriptionPatch {
  const item = sub.items.data[0];
  const state = STATES[sub.status] ?? 'incomplete';
  const suspended = current.state === 'suspended';
  return {
    ...(suspended ? { resumeState: state } : { state }),
    pastDueSince: state === 'past_due' || state === 'unpaid' ? (current.pastDueSince ?? eventAt) : null,
    currentPeriodStart: item ? new Date(item.current_period_start * 1000) : current.currentPeriodStart,
    currentPeriodEnd: item ? new Date(item.current_period_end * 1000) : current.currentPeriodEnd,
    cancelAtPeriodEnd: sub.cancel_at_period_end,
    hasPaymentMethod: !!sub.default_payment_method,
    stripeSubscriptionId: sub.id,
    stripeCustomerId: idOf(sub.customer) ?? current.stripeCustomerId,
    stripeEventAt: current.stripeEventAt && current.stripeEventAt > eventAt ? current.stripeEventAt : eventAt,
    paidUntil: null,
    trialEndsAt: sub.trial_end ? new Date(sub.trial_end * 1000) : current.trialEndsAt,
    ...(planId ? { planId } : {}),
  };
}

export { idOf as stripeId };
