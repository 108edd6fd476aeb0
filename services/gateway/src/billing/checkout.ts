import { GatewayError } from '../lib/errors';
import type { Cause } from './subscription-queries';
import {
  changeSubscription,
  mayMoveTo,
  requireSubscription,
  unknownPlan,
  type BillingDeps,
} from './lifecycle';
import { chargedSeats } from './proration';

function requireStripe(deps: BillingDeps) {
  if (!deps.stripe) {
    throw new GatewayError(
      'invalid_request_error',
      'Payments are not set up on this gateway (no STRIPE_SECRET_KEY): ask your Keygate operator, who extends trials with `keygate account set-trial` and records payments with `keygate account mark-paid`.',
    );
  }
  return deps.stripe;
}

/** A Stripe Checkout session that starts (or changes to) `planId` (default: the current plan) for the account's seats. */
export async function startCheckout(
  deps: BillingDeps,
  accountId: string,
  planId: string | undefined,
  cause: Cause,
) {
  const stripe = requireStripe(deps);
  const s = await requireSubscription(deps, accountId);
  const plan = await deps.store.catalog.get(planId ?? s.planId);
  if (!plan || !mayMoveTo(plan, accountId, s.planId, cause)) throw unknownPlan(planId);
  const members = await deps.store.members.countActive(accountId);
  if (plan.maxSeats !== null && members > plan.maxSeats) {
    throw new GatewayError(
      'invalid_request_error',
      `plan: the ${plan.name} plan has ${plan.maxSeats} seat(s) and the account has ${members} members; remove members first.`,
    );
  }
  const customerId = s.stripeCustomerId ?? (await linkCustomer(deps, accountId, cause));
  const seats = chargedSeats(plan, members);
  const session = await stripe.checkout(s, customerId, plan, seats, deps.clock());
  return { id: session.id, url: session.url, plan: plan.id, seats };
}

/** A Stripe customer-portal session's URL (change plan, payment method, cancel). */
export async function portalUrl(deps: BillingDeps, accountId: string): Promise<string> {
  const stripe = requireStripe(deps);
  const s = await requireSubscription(deps, accountId);
  if (!s.stripeCustomerId)
    throw new GatewayError(
      'invalid_request_error',
      'This account has no Stripe customer yet: start a subscription with POST /v1/organizations/billing/checkout.',
    );
  return stripe.portal(s.stripeCustomerId);
}

async function linkCustomer(deps: BillingDeps, accountId: string, cause: Cause): Promise<string> {
  const account = await deps.store.accounts.get(accountId);
  const customerId = await requireStripe(deps).createCustomer(accountId, account?.name ?? accountId);
  await changeSubscription(deps, accountId, { ...cause, ref: 'stripe customer' }, (s) =>
    s.stripeCustomerId ? null : { stripeCustomerId: customerId },
  );
  return customerId;
}
