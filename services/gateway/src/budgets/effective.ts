import type { Prices } from '../pricing/prices';
import type { BudgetPeriod } from './budget-queries';
import type { SpendLimitRecord } from './spend-limit-queries';
import type { Store } from '../store';
import type { UsageRow } from '../call-log/usage-queries';
import { periodOf } from './period';
import { effectiveLimits } from './spend-limits';

/** One principal's resolved limit for one period and what it spent in the period so far. */
export interface EffectiveRow {
  /** A member, or a key of no member (an app, a service account) held to the organization's default. */
  kind: 'member' | 'key';
  /** The member's or the key's id. */
  principalId: string;
  /** The member's email (null for a key); the member's or the key's name. */
  email: string | null;
  name: string;
  period: BudgetPeriod;
  amountCents: number | null;
  source: SpendLimitRecord;
  /** USD cents, fractional (metered usage is not rounded), from the rollups. */
  spentCents: number;
}

type Deps = {
  store: Pick<Store, 'spendLimits' | 'rbacGroups' | 'budgets' | 'keys'>;
  clock: () => number;
  prices: Prices;
};

/**
 * Each active member's (and key of no member's) effective spend limits, one row per period they resolve a limit for
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
  const principals = members.map((m) => ({
    kind: 'member' as 'member' | 'key',
    principalId: m.memberId,
    email: m.email as string | null,
    name: m.name,
    groupIds: m.groupIds,
  }));
  if (filter.memberIds === null) {
    const keys = await deps.store.keys.list(accountId, { status: 'active' }, { limit: 1000 });
    for (const k of keys.rows)
      if (k.memberId === null && k.kind !== 'admin')
        principals.push({ kind: 'key', principalId: k.id, email: null, name: k.name, groupIds: [] });
  }
  const now = deps.clock();
  const rows: EffectiveRow[] = [];
  for (const { groupIds, ...who } of principals) {
    const memberId = who.kind === 'member' ? who.principalId : null;
    for (const e of effectiveLimits(limits, accountId, memberId, groupIds)) {
      if (filter.periods && !filter.periods.includes(e.period)) continue;
      const p = periodOf(e.period, now);
      const spend = await deps.store.budgets.spendByModel(
        accountId,
        who.kind === 'member' ? 'user' : 'api_key',
        who.principalId,
        new Date(p.start),
        new Date(p.end),
      );
      rows.push({
        ...who,
        period: e.period,
        amountCents: e.amountCents,
        source: e.source,
        spentCents: spend.reduce((sum, r) => sum + deps.prices.rowCost(r as UsageRow).cents, 0),
      });
    }
  }
  return rows;
}
