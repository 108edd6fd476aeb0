import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import { billingNotice } from '../alerts/events';
import { insertAlertEvent } from '../budgets/alert-queries';
import { PlanTooSmallError } from '../tenancy/member-queries';
import { offeredTo, type CatalogPlan } from './catalog-queries';
import type {
  Cause,
  Decide,
  SubscriptionPatch,
  SubscriptionRecord,
  SubscriptionState,
} from './subscription-queries';
import { addMonths } from './proration';
import { effectiveState, standingMessage, type SubscriptionBook } from './standing';
import type { BillingStore } from './install';
import type { StripeBilling } from './stripe';

export interface BillingDeps {
  store: BillingStore;
  clock: () => number;
  graceDays: number;
  /** This instance's in-memory subscriptions: refreshed at once after a change made here. */
  book?: SubscriptionBook | null;
  /** Null when Stripe is not configured (self-hosting: the operator marks accounts paid or sets trials). */
  stripe: StripeBilling | null;
  /** False with `KEYGATE_BILLING=off`: every account is treated as paid (no trial end, no 402, no invoices). */
  enforced?: boolean;
  logger?: Logger;
}

/** States the account is told about (a `billing.notice` alert): calls stop, or will stop. */
const NOTIFIED = new Set<SubscriptionState>(['past_due', 'unpaid', 'paused', 'canceled']);

/**
 * Changes a subscription and refreshes this instance's copy (others hear it through the
 * database). A move into a state of NOTIFIED queues a `billing.notice` alert in the same transaction.
 */
export async function changeSubscription(
  deps: BillingDeps,
  accountId: string,
  cause: Cause,
  decide: Decide,
  event?: { id: string; type: string },
) {
  const at = new Date(deps.clock());
  const notifying: Decide = async (current, t) => {
    const patch = await decide(current, t);
    const state = patch?.state;
    if (state && state !== current.state && NOTIFIED.has(state)) {
      // The state the clock saw coming knows its cause and date; a recorded state alone does not.
      const seen = effectiveState(current, at.getTime(), deps.graceDays);
      const e =
        seen.state === state ? seen : effectiveState({ ...current, ...patch }, at.getTime(), deps.graceDays);
      const message = standingMessage(e, deps.graceDays, !!deps.stripe) ?? `The subscription is ${state}.`;
      await insertAlertEvent(
        t,
        billingNotice(accountId, {
          kind: state,
          state,
          message,
          at,
          dueAt: e.since,
          cause: `${cause.kind}: ${cause.ref}`,
        }),
      );
    }
    return patch;
  };
  const result = await deps.store.subscriptions
    .change(accountId, at, cause, notifying, event)
    .catch((err) => {
      if (!(err instanceof PlanTooSmallError)) throw err;
      throw new GatewayError(
        'invalid_request_error',
        `plan: ${err.message}; remove members first (on team and scale a seat is a member).`,
      );
    });
  if (result) await deps.book?.refresh(accountId);
  return result;
}

export async function requireSubscription(
  deps: Pick<BillingDeps, 'store'>,
  accountId: string,
): Promise<SubscriptionRecord> {
  const s = await deps.store.subscriptions.get(accountId);
  if (!s) throw new GatewayError('not_found_error', `No account with id '${accountId}'.`);
  return s;
}

/** The first period of a paid subscription: from now, or from the trial's end while the trial lasts. */
function firstPeriod(
  s: SubscriptionRecord,
  now: number,
): { currentPeriodStart: Date; currentPeriodEnd: Date } {
  if (s.currentPeriodStart && s.currentPeriodEnd)
    return { currentPeriodStart: s.currentPeriodStart, currentPeriodEnd: s.currentPeriodEnd };
  const start = new Date(Math.max(now, s.trialEndsAt?.getTime() ?? now));
  return { currentPeriodStart: start, currentPeriodEnd: addMonths(start, 1) };
}

/**
 * An operator's change that runs until a future date (a payment recorded, a trial set): refused
 * for a date in the past and for a suspended account.
 */
async function untilChange(
  deps: BillingDeps,
  accountId: string,
  until: Date,
  cause: { actor: string; ref: string },
  decide: (s: SubscriptionRecord, now: number) => SubscriptionPatch,
): Promise<SubscriptionRecord> {
  const now = deps.clock();
  if (until.getTime() <= now)
    throw new GatewayError('invalid_request_error', 'until: must be in the future.');
  await requireSubscription(deps, accountId);
  const result = await changeSubscription(deps, accountId, { kind: 'operator', ...cause }, (s) => {
    if (s.state === 'suspended')
      throw new GatewayError('invalid_request_error', 'The account is suspended: reactivate it first.');
    return decide(s, now);
  });
  return result!.after;
}

/** Self-hosting without Stripe: the operator records that the account has paid until `until`. */
export async function markPaid(
  deps: BillingDeps,
  accountId: string,
  until: Date,
  actor: string,
): Promise<SubscriptionRecord> {
  const after = await untilChange(
    deps,
    accountId,
    until,
    { actor, ref: `paid until ${until.toISOString()}` },
    (s, now) => ({
      state: 'active',
      paidUntil: until,
      pastDueSince: null,
      cancelAtPeriodEnd: false,
      ...firstPeriod(s, now),
    }),
  );
  await deps.store.invoices.markPaid(accountId, until, new Date(deps.clock()), null);
  return after;
}

/**
 * Self-hosting without Stripe: the operator sets (or extends, or shortens) the free trial to end
 * at `until`. An account whose trial had ended is trialing again, so its calls resume at once.
 */
export function setTrial(
  deps: BillingDeps,
  accountId: string,
  until: Date,
  actor: string,
): Promise<SubscriptionRecord> {
  return untilChange(
    deps,
    accountId,
    until,
    { actor, ref: `trial until ${until.toISOString()}` },
    (s, now) => {
      if (s.stripeSubscriptionId && !['canceled', 'incomplete'].includes(s.state))
        throw new GatewayError(
          'invalid_request_error',
          'This account pays through Stripe: its trial is set in Stripe, not here.',
        );
      if (s.paidUntil && s.paidUntil.getTime() > now)
        throw new GatewayError(
          'invalid_request_error',
          `The account is paid until ${s.paidUntil.toISOString()}: a trial would change nothing (record a later payment with mark-paid instead).`,
        );
      return { state: 'trialing', trialEndsAt: until, pastDueSince: null, cancelAtPeriodEnd: false };
    },
  );
}

/**
 * Moves the account to another plan within the seat rules (a plan with fewer seats than
 * members is refused). With a Stripe subscription the change goes through Stripe (the
 * customer portal) and arrives back by webhook.
 */
export async function changePlan(
  deps: BillingDeps,
  accountId: string,
  planId: string,
  cause: Cause,
): Promise<SubscriptionRecord> {
  const plan = await deps.store.catalog.get(planId);
  if (!plan) throw unknownPlan(planId);
  const result = await changeSubscription(deps, accountId, cause, (s) => {
    if (!mayMoveTo(plan, accountId, s.planId, cause)) throw unknownPlan(planId);
    if (s.stripeSubscriptionId && cause.kind !== 'webhook' && !['canceled', 'incomplete'].includes(s.state)) {
      throw new GatewayError(
        'invalid_request_error',
        'This account pays through Stripe: change the plan in the customer portal (POST /v1/organizations/billing/portal).',
      );
    }
    return s.planId === plan.id ? null : { planId: plan.id };
  });
  if (!result) throw new GatewayError('not_found_error', `No account with id '${accountId}'.`);
  return result.after;
}

/** A private plan not offered to the account answers as a plan that does not exist. */
export const unknownPlan = (planId: string | undefined) =>
  new GatewayError('invalid_request_error', `plan: unknown plan '${planId}'.`);

/** An account admin moves only to a plan offered to the account (or stays on its own); operators and Stripe move anywhere. */
export const mayMoveTo = (
  plan: CatalogPlan,
  accountId: string,
  currentPlanId: string,
  cause: Cause,
): boolean => cause.kind !== 'admin' || plan.id === currentPlanId || offeredTo(plan, accountId);

/** Cancels at the end of the current period (at once while trialing); Stripe accounts cancel in the portal. */
export async function cancelAtPeriodEnd(
  deps: BillingDeps,
  accountId: string,
  cause: Cause,
): Promise<SubscriptionRecord> {
  const result = await changeSubscription(deps, accountId, cause, (s) => {
    if (s.stripeSubscriptionId)
      throw new GatewayError(
        'invalid_request_error',
        'This account pays through Stripe: cancel in the customer portal (POST /v1/organizations/billing/portal).',
      );
    if (s.state === 'trialing') return { state: 'canceled' };
    if (s.state !== 'active' && s.state !== 'past_due')
      throw new GatewayError('invalid_request_error', `The subscription is ${s.state}: nothing to cancel.`);
    return { cancelAtPeriodEnd: true };
  });
  return result!.after;
}

/** The operator's suspension as a subscription state; reactivation returns to the state it interrupted. */
export async function recordSuspension(
  deps: BillingDeps,
  accountId: string,
  suspended: boolean,
  actor: string,
): Promise<void> {
  // The account's own `account.suspend` / `account.reactivate` entry is this transition's audit entry.
  await changeSubscription(
    deps,
    accountId,
    { kind: 'operator', actor, ref: suspended ? 'suspend' : 'reactivate', audit: false },
    (s) => {
      if (suspended) return s.state === 'suspended' ? null : { state: 'suspended', resumeState: s.state };
      return s.state === 'suspended' ? { state: s.resumeState ?? 'trialing', resumeState: null } : null;
    },
  );
}
