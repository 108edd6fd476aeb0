import { describe, expect, it } from 'vitest';
import { DAY } from './proration';
import {
  billingRefusal,
  effectiveState,
  standingMessage,
  trialEndingMessage,
  type Standing,
} from './standing';

const T = Date.parse('2026-05-01T12:00:00Z');
const base: Standing = {
  state: 'trialing',
  paidUntil: null,
  pastDueSince: null,
  currentPeriodEnd: null,
  cancelAtPeriodEnd: false,
  hasPaymentMethod: false,
  stripeSubscriptionId: null,
  trialEndsAt: new Date(T),
};

describe('effective state from the clock', () => {
  it('a trial without a payment method ends at its exact instant', () => {
    expect(effectiveState(base, T - 1, 7)).toMatchObject({ state: 'trialing', block: null });
    expect(effectiveState(base, T, 7)).toMatchObject({ state: 'paused', block: 'trial_ended' });
    // With a payment method Stripe charges at the trial's end: calls go on.
    expect(effectiveState({ ...base, hasPaymentMethod: true }, T + DAY, 7).block).toBeNull();
  });

  it('a failed payment keeps calls going for the grace period, to the millisecond', () => {
    const s: Standing = {
      ...base,
      state: 'past_due',
      pastDueSince: new Date(T),
      stripeSubscriptionId: 'sub_1',
    };
    expect(effectiveState(s, T + 7 * DAY - 1, 7)).toMatchObject({ state: 'past_due', block: null });
    expect(effectiveState(s, T + 7 * DAY, 7)).toMatchObject({ state: 'unpaid', block: 'payment_failed' });
    expect(effectiveState(s, T, 0).block).toBe('payment_failed');
  });

  it('a cancellation at period end takes effect at the period end', () => {
    const s: Standing = {
      ...base,
      state: 'active',
      currentPeriodEnd: new Date(T),
      cancelAtPeriodEnd: true,
      stripeSubscriptionId: 'sub_1',
    };
    expect(effectiveState(s, T - 1, 7).block).toBeNull();
    expect(effectiveState(s, T, 7)).toMatchObject({ state: 'canceled', block: 'canceled' });
  });

  it('paid by the operator until a date: then past due, then refused after the grace period', () => {
    const s: Standing = { ...base, state: 'active', paidUntil: new Date(T) };
    expect(effectiveState(s, T - 1, 3)).toMatchObject({ state: 'active', block: null });
    expect(effectiveState(s, T, 3)).toMatchObject({ state: 'past_due', block: null });
    expect(effectiveState(s, T + 3 * DAY, 3)).toMatchObject({ state: 'unpaid', block: 'paid_period_ended' });
  });

  it("states Stripe ends in refuse calls; suspension is the resolver's to refuse (403)", () => {
    for (const state of ['paused', 'incomplete', 'canceled', 'unpaid'] as const)
      expect(effectiveState({ ...base, state }, T - DAY, 7).block).not.toBeNull();
    expect(effectiveState({ ...base, state: 'suspended' }, T + DAY, 7).block).toBeNull();
  });
});

describe('what the account is told, by what this gateway can do', () => {
  const since = new Date(T);
  it('with checkout: the billing page and the account API; without: the operator and the commands', () => {
    for (const block of [
      'trial_ended',
      'paid_period_ended',
      'unpaid',
      'canceled',
      'paused',
      'incomplete',
    ] as const) {
      const withCheckout = billingRefusal(block, since, true);
      expect(withCheckout.status).toBe(402);
      expect(withCheckout.message).toContain('/dashboard/billing');
      const without = billingRefusal(block, since, false).message;
      expect(without, block).toContain('ask your Keygate operator');
      expect(without, block).toContain('keygate account set-trial');
      expect(without, block).not.toMatch(/subscribe|checkout|billing page/i);
    }
    expect(billingRefusal('trial_ended', since, true).message).toMatch(/ended on 2026-05-01 .*: subscribe/);
  });

  it('an overdue payment and the trial notice follow the same rule', () => {
    const overdue = { state: 'past_due' as const, block: null, since };
    expect(standingMessage(overdue, 7, true)).toMatch(/calls stop 7 days .* Pay on the billing page/);
    expect(standingMessage(overdue, 7, false)).toMatch(/Ask your Keygate operator to record the payment/);
    expect(standingMessage({ state: 'active', block: null, since: null }, 7, false)).toBeNull();
    expect(trialEndingMessage(since, true)).toBe(
      'The free trial ends on 2026-05-01. Subscribe on the billing page (/dashboard/billing) to keep calling models.',
    );
    expect(trialEndingMessage(since, false)).toMatch(
      /^The free trial ends on 2026-05-01\. .*ask your Keygate operator to extend the trial/,
    );
  });
});
