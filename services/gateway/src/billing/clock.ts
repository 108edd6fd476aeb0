import { billingNotice } from '../alerts/events';
import type { SubscriptionRecord } from './subscription-queries';
import { issueDueInvoices } from './invoices';
import { changeSubscription, type BillingDeps } from './lifecycle';
import { DAY } from './proration';
import { effectiveState, trialEndingMessage } from './standing';

/** Days before a trial's end that the account is told (banner, alert outbox). */
export const TRIAL_NOTICE_DAYS = 3;

/**
 * What the clock brings, for every account that has something due: the trial notice three
 * days ahead, a trial ending without payment, a grace period running out, a cancellation at
 * period end, and each finished period's invoice. Admission already refuses at the exact
 * instant (it computes the state from the clock); this records it. Safe to run on every
 * instance at once: each change is conditional on the state it read under the account lock.
 */
export async function runBillingClock(
  deps: BillingDeps,
): Promise<{ transitions: number; notices: number; invoices: number }> {
  const now = deps.clock();
  const out = { transitions: 0, notices: 0, invoices: 0 };
  // Billing off: every account is treated as paid, so nothing falls due.
  if (deps.enforced === false) return out;
  for (const due of await deps.store.subscriptions.due(new Date(now), TRIAL_NOTICE_DAYS * DAY)) {
    try {
      out.notices += await trialNotice(deps, due, now);
      out.invoices += await issueDueInvoices(deps, due.accountId, now);
      const seen = effectiveState(due, now, deps.graceDays);
      if (seen.state === due.state) continue;
      const ref = seen.block ?? (seen.state === 'past_due' ? 'paid_period_ended' : seen.state);
      const result = await changeSubscription(
        deps,
        due.accountId,
        { kind: 'clock', actor: 'clock', ref },
        (s) => {
          const e = effectiveState(s, now, deps.graceDays);
          if (e.state === s.state) return null;
          if (e.state === 'past_due' || e.state === 'unpaid')
            return { state: e.state, pastDueSince: s.pastDueSince ?? e.since };
          return { state: e.state };
        },
      );
      if (result && result.after.state !== result.before.state) out.transitions += 1;
    } catch (error) {
      deps.logger?.warn('billing clock failed for an account', { accountId: due.accountId, error });
    }
  }
  return out;
}

async function trialNotice(deps: BillingDeps, s: SubscriptionRecord, now: number): Promise<number> {
  const end = s.trialEndsAt?.getTime();
  if (
    s.state !== 'trialing' ||
    end === undefined ||
    s.hasPaymentMethod ||
    now >= end ||
    now < end - TRIAL_NOTICE_DAYS * DAY
  )
    return 0;
  const notice = {
    accountId: s.accountId,
    kind: 'trial_will_end',
    dueAt: s.trialEndsAt!,
    message: trialEndingMessage(s.trialEndsAt!, !!deps.stripe),
  };
  const fresh = await deps.store.invoices.notice(
    notice,
    billingNotice(s.accountId, { ...notice, state: s.state, at: new Date(now), cause: 'clock' }),
  );
  return fresh ? 1 : 0;
}
