import type { BudgetPeriod, BudgetRecord } from './budget-queries';
import type { SpendLimitRecord } from './spend-limit-queries';

/** One principal's resolved limit for one period, and the limit it came from. */
export interface EffectiveLimit {
  period: BudgetPeriod;
  /** USD cents; null when nothing caps this period (an explicit no-limit override, or no limit). */
  amountCents: number | null;
  /** The limit that decided it. */
  source: SpendLimitRecord;
}

export const PERIODS: readonly BudgetPeriod[] = ['daily', 'weekly', 'monthly'];

/** The percents of a spend limit at which the account hears (webhook, dashboard, status line), once per period each. */
export const WARN_AT: readonly number[] = [50, 80, 100];

/**
 * The spend limits of one principal, period by period (each resolves independently, as the
 * provider documents: https://platform.claude.com/docs/en/api/beta/organization/spend_limits,
 * read 2026-11-25). A member's own `user` limit wins (null amount: no limit for that period);
 * else the tightest of their groups' limits and the organization's default per member. A key
 * of no member (an app, a service account) is held to the organization's default on its own.
 */
export function effectiveLimits(
  limits: readonly SpendLimitRecord[],
  accountId: string,
  memberId: string | null,
  groupIds: readonly string[],
): EffectiveLimit[] {
  const out: EffectiveLimit[] = [];
  for (const period of PERIODS) {
    let own: SpendLimitRecord | null = null;
    let tightest: SpendLimitRecord | null = null;
    for (const l of limits) {
      if (l.period !== period) continue;
      if (l.scopeType === 'user') {
        if (memberId !== null && l.scopeId === memberId) own = l;
        continue;
      }
      const applies = l.scopeType === 'organization' ? l.scopeId === accountId : groupIds.includes(l.scopeId);
      if (!applies || l.amountCents === null) continue;
      if (tightest === null || l.amountCents < tightest.amountCents!) tightest = l;
    }
    const source = own ?? tightest;
    if (source) out.push({ period, amountCents: source.amountCents, source });
  }
  return out;
}

/**
 * A principal's limits as hard-capped budgets of the budgets engine: they count on the
 * member's (or the key's) spend counter of the period, the counter a `user` budget of the
 * same period uses, and reserve at admission like every hard cap.
 */
export function spendLimitRules(
  limits: readonly SpendLimitRecord[],
  accountId: string,
  keyId: string,
  memberId: string | null,
  groupIds: readonly string[],
): BudgetRecord[] {
  const rules: BudgetRecord[] = [];
  for (const e of effectiveLimits(limits, accountId, memberId, groupIds)) {
    if (e.amountCents === null) continue;
    rules.push({
      id: e.source.id,
      accountId,
      scope: memberId === null ? 'api_key' : 'user',
      targetId: memberId ?? keyId,
      name: sourceName(e.source),
      limitCents: e.amountCents,
      hardCap: true,
      hold: e.source.hold ?? 'expected',
      thresholds: [...WARN_AT],
      period: e.period,
      createdBy: null,
      createdAt: e.source.createdAt,
    });
  }
  return rules;
}

function sourceName(l: SpendLimitRecord): string {
  if (l.scopeType === 'organization') return "the organization's per-member";
  if (l.scopeType === 'rbac_group') return `group ${l.scopeId}'s per-member`;
  return 'your own';
}
