import type { Principal } from '../auth/resolver';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { Store, SubscriptionRecord, SubscriptionState } from '../store';
import { DAY } from './proration';

export const BILLING_PAGE = '/dashboard/billing';
const WHERE = `An account admin can fix it on the billing page (${BILLING_PAGE}) or through the account API (GET /v1/organizations/billing/subscription, POST /v1/organizations/billing/checkout)`;

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

/** The 402 a refused call gets: what happened, what to do, and where. */
export function billingRefusal(block: Exclude<Block, null>, since: Date | null): GatewayError {
  const what: Record<Exclude<Block, null>, string> = {
    trial_ended: `This account's free trial ended on ${day(since)} without a payment method, so model calls are paused. ${WHERE}: subscribe, and calls resume within a second.`,
    payment_failed: `This account's payment failed on ${day(since)} and the grace period is over, so model calls are paused. ${WHERE}: update the payment method or pay the open invoice, and calls resume within a second.`,
    paid_period_ended: `This account's paid period ended on ${day(since)} and the grace period is over, so model calls are paused. ${WHERE}, or ask your Keygate operator to record the payment.`,
    unpaid: `This account's subscription is unpaid, so model calls are paused. ${WHERE}: pay the open invoice, and calls resume within a second.`,
    canceled: `This account's subscription was canceled${since ? ` on ${day(since)}` : ''}, so model calls are refused. ${WHERE}: subscribe again to resume.`,
    paused: `This account's subscription is paused (the trial ended without a payment method). ${WHERE}: add a payment method to resume.`,
    incomplete: `This account's first payment is not complete yet. ${WHERE}: finish the checkout to start calling models.`,
  };
  return new GatewayError('billing_error', what[block], { headers: { 'x-should-retry': 'false' } });
}

/** What an account is told about its standing (banner, `billing.notice` alert): why calls stop or will stop, and what to do; null when all is well. */
export function standingMessage(
  e: { state: SubscriptionState; block: Block; since: Date | null },
  graceDays: number,
): string | null {
  if (e.block) return billingRefusal(e.block, e.since).message;
  if (e.state === 'past_due')
    return `A payment is overdue: calls stop ${graceDays} days after it fell due. Pay on the billing page (${BILLING_PAGE}).`;
  return null;
}

/**
 * Every account's subscription in memory, so admission never asks the database: loaded at
 * start, and each account re-read when an `account:<id>` invalidation arrives (the same
 * LISTEN/NOTIFY and poll that spread key revocation), so a payment reaches every instance
 * within a second.
 */
export class SubscriptionBook {
  readonly #rows = new Map<string, Standing>();
  readonly #store: Pick<Store, 'subscriptions'>;
  readonly #clock: () => number;
  readonly #graceDays: number;
  readonly #logger: Logger | undefined;
  #generation = 0;

  constructor(
    store: Pick<Store, 'subscriptions'>,
    opts: { clock: () => number; graceDays: number; logger?: Logger },
  ) {
    this.#store = store;
    this.#clock = opts.clock;
    this.#graceDays = opts.graceDays;
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

  /** Throws the 402 for an account whose calls are paused; admin keys never come here (they cannot call models). */
  admit(principal: Principal): void {
    const row = this.#rows.get(principal.account.id);
    const s: Standing = row ?? { ...NO_ROW, trialEndsAt: principal.account.trialEndsAt };
    const { block, since } = effectiveState(s, this.#clock(), this.#graceDays);
    if (block) throw billingRefusal(block, since);
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
