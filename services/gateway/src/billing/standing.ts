import type { Principal } from '../auth/resolver';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { BillingStore } from './install';
import type { SubscriptionRecord, SubscriptionState } from './subscription-queries';
import { DAY } from './proration';

export const BILLING_PAGE = '/dashboard/billing';
const WHERE = `An account admin can fix it on the billing page (${BILLING_PAGE}) or through the account API (GET /v1/organizations/billing/subscription, POST /v1/organizations/billing/checkout)`;
/** A gateway without checkout (no Stripe) takes no payment online: only its operator can let calls resume. */
const ASK_OPERATOR =
  'This gateway takes no payments online: ask your Keygate operator to extend the trial (`keygate account set-trial`) or record a payment (`keygate account mark-paid`), and calls resume within a second.';

/** Why calls are refused, or null while the account may call models. */
export type Block =
  | 'trial_ended'
  | 'payment_failed'
  | 'paid_period_ended'
  | 'unpaid'
  | 'canceled'
  | 'paused'
  | 'incomplete'
  | null;

/** What admission needs of a subscription (an account without a row is trialing on its account's trial). */
export type Standing = Pick<
  SubscriptionRecord,
  | 'state'
  | 'paidUntil'
  | 'pastDueSince'
  | 'currentPeriodEnd'
  | 'cancelAtPeriodEnd'
  | 'hasPaymentMethod'
  | 'stripeSubscriptionId'
  | 'trialEndsAt'
>;

/**
 * The state as of `now`, which may run ahead of the stored one: the clock's transitions
 * (trial end, grace, period end) take effect at their exact instant, before anyone records them.
 */
export function effectiveState(
  s: Standing,
  now: number,
  graceDays: number,
): { state: SubscriptionState; block: Block; since: Date | null } {
  const grace = graceDays * DAY;
  const paidUntil = s.paidUntil?.getTime() ?? null;
  if (s.state === 'suspended') return { state: 'suspended', block: null, since: null };
  const periodEnd = s.currentPeriodEnd?.getTime() ?? null;
  if (s.state === 'canceled' || (s.cancelAtPeriodEnd && periodEnd !== null && now >= periodEnd)) {
    return {
      state: 'canceled',
      block: 'canceled',
      since: s.state === 'canceled' ? null : s.currentPeriodEnd,
    };
  }
  if (paidUntil !== null && now < paidUntil) return { state: 'active', block: null, since: null };
  const trialEnd = s.trialEndsAt?.getTime() ?? null;
  switch (s.state) {
    case 'trialing':
      if (trialEnd === null || now < trialEnd || s.hasPaymentMethod)
        return { state: 'trialing', block: null, since: null };
      return { state: 'paused', block: 'trial_ended', since: s.trialEndsAt };
    case 'active': {
      // Paid by the operator (no Stripe): the paid period ending is a payment due, with the same grace as a failed one.
      if (!s.stripeSubscriptionId && paidUntil !== null) {
        return now < paidUntil + grace
          ? { state: 'past_due', block: null, since: s.paidUntil }
          : { state: 'unpaid', block: 'paid_period_ended', since: s.paidUntil };
      }
      return { state: 'active', block: null, since: null };
    }
    case 'past_due': {
      const since = s.pastDueSince?.getTime() ?? now;
      if (now < since + grace) return { state: 'past_due', block: null, since: s.pastDueSince };
      return {
        state: 'unpaid',
        block: s.stripeSubscriptionId ? 'payment_failed' : 'paid_period_ended',
        since: s.pastDueSince,
      };
    }
    case 'unpaid':
      return { state: 'unpaid', block: 'unpaid', since: null };
    default:
      return { state: s.state, block: s.state as Block, since: null };
  }
}

const day = (d: Date | null) => (d ? d.toISOString().slice(0, 10) : 'recently');

/**
 * The 402 a refused call gets: what happened, what to do, and where. `checkout` says whether
 * this gateway can take a payment (Stripe); without it the way out is the operator.
 */
export function billingRefusal(
  block: Exclude<Block, null>,
  since: Date | null,
  checkout: boolean,
): GatewayError {
  const why: Record<Exclude<Block, null>, string> = {
    trial_ended: `This account's free trial ended on ${day(since)} without a payment method, so model calls are paused.`,
    payment_failed: `This account's payment failed on ${day(since)} and the grace period is over, so model calls are paused.`,
    paid_period_ended: `This account's paid period ended on ${day(since)} and the grace period is over, so model calls are paused.`,
    unpaid: "This account's subscription is unpaid, so model calls are paused.",
    canceled: `This account's subscription was canceled${since ? ` on ${day(since)}` : ''}, so model calls are refused.`,
    paused: "This account's subscription is paused (the trial ended without a payment method).",
    incomplete: "This account's first payment is not complete yet.",
  };
  const fix: Record<Exclude<Block, null>, string> = {
    trial_ended: `${WHERE}: subscribe, and calls resume within a second.`,
    payment_failed: `${WHERE}: update the payment method or pay the open invoice, and calls resume within a second.`,
    paid_period_ended: `${WHERE}, or ask your Keygate operator to record the payment.`,
    unpaid: `${WHERE}: pay the open invoice, and calls resume within a second.`,
    canceled: `${WHERE}: subscribe again to resume.`,
    paused: `${WHERE}: add a payment method to resume.`,
    incomplete: `${WHERE}: finish the checkout to start calling models.`,
  };
  const message = `${why[block]} ${checkout ? fix[block] : ASK_OPERATOR}`;
  return new GatewayError('billing_error', message, {
    reason: 'billing',
    headers: { 'x-should-retry': 'false' },
  });
}

/** What an account is told about its standing (banner, `billing.notice` alert): why calls stop or will stop, and what to do; null when all is well. */
export function standingMessage(
  e: { state: SubscriptionState; block: Block; since: Date | null },
  graceDays: number,
  checkout: boolean,
): string | null {
  if (e.block) return billingRefusal(e.block, e.since, checkout).message;
  if (e.state === 'past_due')
    return `A payment is overdue: calls stop ${graceDays} days after it fell due. ${checkout ? `Pay on the billing page (${BILLING_PAGE}).` : 'Ask your Keygate operator to record the payment (`keygate account mark-paid`).'}`;
  return null;
}

/** What an account is told three days before its trial ends. */
export function trialEndingMessage(end: Date, checkout: boolean): string {
  const how = checkout
    ? `Subscribe on the billing page (${BILLING_PAGE}) to keep calling models.`
    : 'To keep calling models after it, ask your Keygate operator to extend the trial (`keygate account set-trial`) or record a payment (`keygate account mark-paid`).';
  return `The free trial ends on ${end.toISOString().slice(0, 10)}. ${how}`;
}

/**
 * Every account's subscription in memory, so admission never asks the database: loaded at
 * start, and each account re-read when an `account:<id>` invalidation arrives (the same
 * LISTEN/NOTIFY and poll that spread key revocation), so a payment reaches every instance
 * within a second.
 */
export class SubscriptionBook {
  readonly #rows = new Map<string, Standing>();
  readonly #store: Pick<BillingStore, 'subscriptions'>;
  readonly #clock: () => number;
  readonly #graceDays: number;
  readonly #enforced: boolean;
  readonly #checkout: boolean;
  readonly #logger: Logger | undefined;
  #generation = 0;

  constructor(
    store: Pick<BillingStore, 'subscriptions'>,
    opts: { clock: () => number; graceDays: number; enforced?: boolean; checkout?: boolean; logger?: Logger },
  ) {
    this.#store = store;
    this.#clock = opts.clock;
    this.#graceDays = opts.graceDays;
    this.#enforced = opts.enforced ?? true;
    this.#checkout = opts.checkout ?? false;
    this.#logger = opts.logger;
  }

  get graceDays(): number {
    return this.#graceDays;
  }

  async load(): Promise<void> {
    const generation = ++this.#generation;
    const rows = await this.#store.subscriptions.all();
    if (generation !== this.#generation) return;
    this.#rows.clear();
    for (const r of rows) this.#rows.set(r.accountId, r);
  }

  async refresh(accountId: string): Promise<void> {
    const row = await this.#store.subscriptions.get(accountId);
    if (row) this.#rows.set(accountId, row);
    else this.#rows.delete(accountId);
  }

  /** Applies a `keygate_invalidate` payload: an account's row is re-read; anything but a key or member reloads all. */
  apply(payload: string): void {
    const [kind, id] = [payload.slice(0, payload.indexOf(':')), payload.slice(payload.indexOf(':') + 1)];
    const work =
      kind === 'account' && id ? this.refresh(id) : kind === 'key' || kind === 'member' ? null : this.load();
    work?.catch((error) => this.#logger?.warn('subscription refresh failed', { error, payload }));
  }

  /** Throws the 402 for an account whose calls are paused (never with billing off); admin keys never come here (they cannot call models). */
  admit(principal: Principal): void {
    if (!this.#enforced) return;
    const row = this.#rows.get(principal.account.id);
    const now = this.#clock();
    // No subscription row and a trial still running (most calls of a trialing account): nothing to work out.
    const trialEnd = principal.account.trialEndsAt;
    if (!row && (trialEnd === null || now < trialEnd.getTime())) return;
    const s: Standing = row ?? { ...NO_ROW, trialEndsAt: trialEnd };
    const { block, since } = effectiveState(s, now, this.#graceDays);
    if (block) throw billingRefusal(block, since, this.#checkout);
  }
}

/** An account without a subscription row: trialing on its account's trial. */
export const NO_ROW: Omit<Standing, 'trialEndsAt'> = {
  state: 'trialing',
  paidUntil: null,
  pastDueSince: null,
  currentPeriodEnd: null,
  cancelAtPeriodEnd: false,
  hasPaymentMethod: false,
  stripeSubscriptionId: null,
};
