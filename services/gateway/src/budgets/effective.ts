import { rowCost } from '../pricing/prices';
import type { BudgetPeriod, SpendLimitRecord, Store, UsageRow } from '../store';
import { periodOf } from './period';
import { effectiveLimits } from './spend-limits';

/** One principal's resolved limit for one period and what it spent in the period so far. */
export interface EffectiveRow {
  memberId: string;
  email: string;
  name: string;
  period: BudgetPeriod;
  amountCents: number | null;
  source: SpendLimitRecord;
  /** USD cents, fractional (metered usage is not rounded), from the rollups. */
  spentCents: number;
}

type Deps = { store: Pick<Store, 'spendLimits' | 'rbacGroups' | 'budgets'>; clock: () => number };

/**
 * Each active member's effective spend limits, one row per period they resolve a limit for
 * (the provider's `spend_limits/effective` report), with their spend this period.
 */
export async function effectiveReport(
  deps: Deps,
  accountId: string,
  filter: { memberIds: string[] | null; periods: BudgetPeriod[] | null },
): Promise<EffectiveRow[]> {
  const limits = await deps.store.spendLimits.ofAccount(accountId);
  if (limits.length === 0) return [];
  const members = await deps.store.rbacGroups.memberGroups(accountId, filter.memberIds);
  const now = deps.clock();
  const rows: EffectiveRow[] = [];
  for (const m of members) {
    for (const e of effectiveLimits(limits, accountId, m.memberId, m.groupIds)) {
      if (filter.periods && !filter.periods.includes(e.period)) continue;
      const p = periodOf(e.period, now);
      const spend = await deps.store.budgets.spendByModel(
        accountId,
        'user',
        m.memberId,
        new Date(p.start),
        new Date(p.end),
      );
      rows.push({
        memberId: m.memberId,
        email: m.email,
        name: m.name,
        period: e.period,
        amountCents: e.amountCents,
        source: e.source,
        spentCents: spend.reduce((sum, r) => sum + rowCost(r as UsageRow).cents, 0),
      });
    }
  }
  return rows;
}
