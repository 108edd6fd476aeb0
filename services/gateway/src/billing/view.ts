import { offeredTo, type CatalogPlan } from './catalog-queries';
import type { NoticeRecord } from './invoice-queries';
import type { PlanRecord } from '../tenancy/account-queries';
import type { SubscriptionRecord, TransitionRecord } from './subscription-queries';
import { invoiceJson, upcomingInvoice, upcomingJson } from './invoices';
import type { BillingDeps } from './lifecycle';
import { requireSubscription } from './lifecycle';
import { chargedSeats, DAY } from './proration';
import { effectiveState, standingMessage } from './standing';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** A plan as the APIs and the CLI show it. */
export function planJson(p: PlanRecord) {
  return {
    id: p.id,
    type: 'plan' as const,
    name: p.name,
    price_cents: p.priceCents,
    currency: p.currency,
    per_seat: p.perSeat,
    max_seats: p.maxSeats,
    trial_days: p.trialDays,
  };
}

/** A catalog plan as the APIs show it; the comparison of plans is a list of these. */
export function catalogJson(p: CatalogPlan) {
  return {
    ...planJson(p),
    min_seats: p.minSeats,
    default_limits: {
      requests_per_minute: p.defaultLimitRpm,
      tokens_per_minute: p.defaultLimitTpm,
      input_tokens_per_minute: p.defaultLimitItpm,
      output_tokens_per_minute: p.defaultLimitOtpm,
      monthly_spend_cap_cents: p.defaultMonthlySpendCapCents,
    },
    retention_days: p.retentionDays,
    features: p.features,
    stripe_price_id: p.stripePriceId,
    visibility: p.visibility,
  };
}

/** The plans an account's admins see and may move to: the public ones, those offered to it, and its own. */
export async function plansFor(deps: BillingDeps, accountId: string): Promise<CatalogPlan[]> {
  const [plans, s] = await Promise.all([deps.store.catalog.list(), requireSubscription(deps, accountId)]);
  return plans.filter((p) => p.id === s.planId || offeredTo(p, accountId));
}

export function transitionJson(t: TransitionRecord) {
  return {
    id: t.id,
    from: t.fromState,
    to: t.toState,
    from_plan: t.fromPlan,
    to_plan: t.toPlan,
    cause: t.cause,
    cause_ref: t.causeRef,
    at: iso(t.at),
  };
}

export function noticeJson(n: NoticeRecord) {
  return {
    id: n.id,
    kind: n.kind,
    message: n.message,
    due_at: iso(n.dueAt),
    created_at: iso(n.createdAt),
    delivered_at: iso(n.deliveredAt),
  };
}

/** The state as of now, the trial, and the banner (why calls stop or will stop, the trial notice). */
function standingOf(
  deps: Pick<BillingDeps, 'clock' | 'graceDays' | 'enforced' | 'stripe'>,
  s: SubscriptionRecord,
  notices: NoticeRecord[],
) {
  const now = deps.clock();
  // Billing off: every account is treated as paid (the operator's suspension still holds).
  const e =
    deps.enforced === false
      ? { state: s.state === 'suspended' ? s.state : ('active' as const), block: null, since: null }
      : effectiveState(s, now, deps.graceDays);
  const trialEnd = s.trialEndsAt?.getTime() ?? null;
  const inTrial = e.state === 'trialing' && trialEnd !== null && trialEnd > now;
  const trialNotice = inTrial
    ? notices.find((n) => n.kind === 'trial_will_end' && n.dueAt.getTime() === trialEnd)
    : undefined;
  const standing = standingMessage(e, deps.graceDays, !!deps.stripe);
  const banner = e.block
    ? { kind: 'blocked', message: standing! }
    : trialNotice
      ? { kind: 'trial_will_end', message: trialNotice.message }
      : standing
        ? { kind: e.state as string, message: standing }
        : null;
  return { e, inTrial, trialEnd, banner };
}

/** What every dashboard page's banner says about the account's standing (null: nothing to say), and the state. */
export async function standingBanner(deps: BillingDeps, accountId: string) {
  const [s, notices] = await Promise.all([
    requireSubscription(deps, accountId),
    deps.store.invoices.notices(accountId),
  ]);
  const { e, banner } = standingOf(deps, s, notices);
  return { state: e.state, callsAllowed: !e.block, banner };
}

/**
 * Everything the billing page shows about the subscription: state (as of now, and as
 * recorded), plan, trial days left, seats, period, how it is paid, the banner and the
 * history. Usage costs are in USD in the cost report, never added to these EUR figures.
 */
export async function subscriptionView(deps: BillingDeps, accountId: string) {
  const s = await requireSubscription(deps, accountId);
  const now = deps.clock();
  const plan = await deps.store.catalog.get(s.planId);
  const members = await deps.store.members.countActive(accountId);
  const notices = await deps.store.invoices.notices(accountId);
  const { e, inTrial, trialEnd, banner } = standingOf(deps, s, notices);
  return {
    type: 'subscription' as const,
    account_id: accountId,
    state: e.state,
    recorded_state: s.state,
    calls_allowed: !e.block,
    plan: plan ? catalogJson(plan) : null,
    trial: { ends_at: iso(s.trialEndsAt), days_left: inTrial ? Math.ceil((trialEnd! - now) / DAY) : 0 },
    seats: {
      members,
      charged: plan ? chargedSeats(plan, members) : members,
      min: plan?.minSeats ?? 1,
      max: plan?.maxSeats ?? null,
    },
    current_period: s.currentPeriodStart
      ? { start: iso(s.currentPeriodStart), end: iso(s.currentPeriodEnd) }
      : null,
    cancel_at_period_end: s.cancelAtPeriodEnd,
    paid_until: iso(s.paidUntil),
    past_due_since: iso(s.pastDueSince),
    grace_days: deps.graceDays,
    /** `off` (KEYGATE_BILLING=off): the gateway treats every account as paid. */
    billing: deps.enforced === false ? ('off' as const) : ('on' as const),
    payment: {
      provider: s.stripeSubscriptionId ? ('stripe' as const) : s.paidUntil ? ('manual' as const) : null,
      stripe_available: !!deps.stripe,
      has_payment_method: s.hasPaymentMethod,
    },
    banner,
    notices: notices.map(noticeJson),
    transitions: (await deps.store.subscriptions.transitions(accountId)).slice(-20).map(transitionJson),
    usage_costs: {
      currency: 'USD',
      note: 'Model usage is billed by the provider in USD and reported apart; it is never added to the subscription.',
      report: '/v1/organizations/cost_report',
    },
  };
}

/** The whole billing page in one call: subscription, upcoming invoice, recent invoices and the plan comparison. */
export async function billingOverview(deps: BillingDeps, accountId: string, invoiceLimit = 12) {
  const [subscription, upcoming, invoices, plans] = await Promise.all([
    subscriptionView(deps, accountId),
    upcomingInvoice(deps, accountId),
    deps.store.invoices.list(accountId, { limit: invoiceLimit }),
    plansFor(deps, accountId),
  ]);
  return {
    subscription,
    upcoming: upcomingJson(upcoming).invoice,
    invoices: invoices.rows.map(invoiceJson),
    plans: plans.map(catalogJson),
  };
}
