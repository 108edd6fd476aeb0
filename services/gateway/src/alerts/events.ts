import type { Principal } from '../auth/resolver';
import type { Crossing } from '../budgets/guard';
import type { NewAlertEvent } from '../budgets/alert-queries';

/** What an endpoint can subscribe to. `billing.notice` is raised by billing (trial ending, payment due). */
export const ALERT_EVENT_TYPES = [
  'budget.threshold_crossed',
  'spend_limit.threshold_crossed',
  'error_rate.exceeded',
  'api_key.used_after_rotation',
  'billing.notice',
  'spend_limit.increase_requested',
  'spend_limit.increase_approved',
  'spend_limit.increase_denied',
] as const;
export type AlertEventType = (typeof ALERT_EVENT_TYPES)[number];

const iso = (t: number | Date) => new Date(t).toISOString();
const cents = (c: number) => Math.round(c * 1e6) / 1e6;

export function budgetCrossed(c: Crossing): NewAlertEvent {
  const b = c.budget;
  return {
    accountId: b.accountId,
    type: 'budget.threshold_crossed',
    data: {
      budget_id: b.id,
      budget_name: b.name,
      scope: b.scope,
      target_id: b.targetId,
      period: b.period,
      period_start: iso(c.period.start),
      period_end: iso(c.period.end),
      threshold_percent: c.threshold,
      limit_cents: b.limitCents,
      spent_cents: cents(c.spentCents),
      hard_cap: b.hardCap,
    },
  };
}

/** Spend limits and keys' own monthly caps (guard.ts's `cap:<key id>`) warn the same way. */
export const isSpendLimit = (budgetId: string) => budgetId.startsWith('spl_') || budgetId.startsWith('cap:');

/**
 * A member (or a key of no member) reached 50, 80 or 100% of a spend limit this period, or a
 * key of its own monthly spend cap (`source: "api_key_cap"`, no spend limit id). A limit
 * of the organization or a group applies to each member on their own, so the event is once per
 * limit, member, period and threshold: its dedup key makes it so across instances.
 */
export function spendLimitCrossed(c: Crossing): NewAlertEvent {
  const b = c.budget;
  const start = iso(c.period.start);
  const cap = b.id.startsWith('cap:');
  return {
    accountId: b.accountId,
    type: 'spend_limit.threshold_crossed',
    data: {
      source: cap ? 'api_key_cap' : 'spend_limit',
      spend_limit_id: cap ? null : b.id,
      user_id: b.scope === 'user' ? b.targetId : null,
      api_key_id: b.scope === 'api_key' ? b.targetId : null,
      period: b.period,
      period_start: start,
      period_end: iso(c.period.end),
      threshold_percent: c.threshold,
      amount: String(b.limitCents),
      period_to_date_spend: String(cents(c.spentCents)),
    },
    dedupKey: `spend_limit.threshold_crossed:${b.id}:${b.targetId}:${start}:${c.threshold}`,
  };
}

/** The secret a key was rotated away from was presented after its grace period ended. */
export function retiredSecretUsed(p: Principal, now: number): NewAlertEvent {
  const expired = p.secretExpiresAt ? iso(p.secretExpiresAt) : null;
  return {
    accountId: p.account.id,
    type: 'api_key.used_after_rotation',
    data: {
      api_key_id: p.key.id,
      api_key_name: p.key.name,
      member_id: p.key.memberId,
      old_secret_expired_at: expired,
      seen_at: iso(now),
    },
    // Once a day per retired secret, however often it is presented.
    dedupKey: `api_key.used_after_rotation:${p.key.id}:${expired}:${iso(now).slice(0, 10)}`,
  };
}

export function errorRateExceeded(
  w: { id: string; accountId: string; threshold: number; windowSeconds: number },
  calls: number,
  errors: number,
): NewAlertEvent {
  return {
    accountId: w.accountId,
    type: 'error_rate.exceeded',
    endpointId: w.id,
    data: {
      error_rate: errors / calls,
      threshold: w.threshold,
      calls,
      errors,
      window_seconds: w.windowSeconds,
    },
  };
}

/** A billing notice: the trial ends soon, or the subscription moved to a state that stops (or will stop) calls. */
export function billingNotice(
  accountId: string,
  n: { kind: string; state: string; message: string; at: Date; dueAt?: Date | null; cause?: string },
): NewAlertEvent {
  return {
    accountId,
    type: 'billing.notice',
    data: {
      kind: n.kind,
      state: n.state,
      message: n.message,
      at: iso(n.at),
      due_at: n.dueAt ? iso(n.dueAt) : null,
      cause: n.cause ?? null,
      billing_page: '/dashboard/billing',
    },
    dedupKey:
      n.kind === 'trial_will_end' && n.dueAt
        ? `billing.notice:trial_will_end:${accountId}:${iso(n.dueAt)}`
        : null,
  };
}
