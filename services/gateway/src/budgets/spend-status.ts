import type { Prices } from '../pricing/prices';
import { Hono } from 'hono';
import type { AppEnv } from '../app-env';
import { keyAuth } from '../auth/middleware';
import type { KeyResolver } from '../auth/resolver';
import type { BudgetPeriod } from './budget-queries';
import type { Store } from '../store';
import type { UsageRow } from '../call-log/usage-queries';
import { effectiveReport } from './effective';
import { periodOf } from './period';

/** One spend limit a member (or a key of no member) is under, and how far into it they are. */
export interface LimitStatus {
  period: BudgetPeriod;
  /** A spend limit, or null for the key's own monthly spend cap. */
  spendLimitId: string | null;
  limitCents: number;
  /** USD cents at list prices, this period to date. */
  spentCents: number;
  /** Spent as a percent of the limit (100 for a limit of 0). */
  percent: number;
  resetsAt: Date;
}

type Deps = {
  store: Pick<Store, 'spendLimits' | 'rbacGroups' | 'budgets' | 'keys'>;
  clock: () => number;
  prices: Prices;
};

/**
 * The spend limits a member (or, with `memberId` null, a key of no member) is under this period,
 * and the calling key's own monthly cap (`capCents`), fullest first: what the status line shows.
 */
export async function limitStatus(
  deps: Deps,
  accountId: string,
  who: { memberId: string | null; keyId: string; capCents?: number | null },
): Promise<LimitStatus[]> {
  const cap = who.capCents == null ? [] : [await capStatus(deps, accountId, who.keyId, who.capCents)];
  const rows = await effectiveReport(deps, accountId, {
    memberIds: who.memberId ? [who.memberId] : null,
    periods: null,
  });
  const now = deps.clock();
  const limits: LimitStatus[] = rows
    .filter((r) => r.amountCents !== null && r.principalId === (who.memberId ?? who.keyId))
    .map((r) => {
      const limitCents = r.amountCents!;
      return {
        period: r.period,
        spendLimitId: r.source.id,
        limitCents,
        spentCents: r.spentCents,
        percent: limitCents > 0 ? (r.spentCents / limitCents) * 100 : 100,
        resetsAt: new Date(periodOf(r.period, now).end),
      };
    });
  return limits.concat(cap).sort((a, b) => b.percent - a.percent);
}

/** A key's own monthly spend cap (`limits.monthly_spend_cap_cents`) as a limit it is under. */
export async function capStatus(
  deps: Deps,
  accountId: string,
  keyId: string,
  capCents: number,
): Promise<LimitStatus> {
  const p = periodOf('monthly', deps.clock());
  const spend = await deps.store.budgets.spendByModel(
    accountId,
    'api_key',
    keyId,
    new Date(p.start),
    new Date(p.end),
  );
  const spentCents = spend.reduce((sum, r) => sum + deps.prices.rowCost(r as UsageRow).cents, 0);
  return {
    period: 'monthly',
    spendLimitId: null,
    limitCents: capCents,
    spentCents,
    percent: capCents > 0 ? (spentCents / capCents) * 100 : 100,
    resetsAt: new Date(p.end),
  };
}

export function limitStatusJson(s: LimitStatus) {
  return {
    period: s.period,
    source: s.spendLimitId === null ? ('api_key_cap' as const) : ('spend_limit' as const),
    spend_limit_id: s.spendLimitId,
    amount: String(s.limitCents),
    period_to_date_spend: String(Math.round(s.spentCents * 1000) / 1000),
    percent: Math.round(s.percent * 100) / 100,
    resets_at: s.resetsAt.toISOString(),
  };
}

/**
 * `GET /keygate/v1/spend`: the caller's own spend limits and spend this period, with the
 * credential they call with (a member token or an app key): what `keygate statusline` shows.
 */
export function spendStatusRoutes(deps: Deps & { resolver: KeyResolver }): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get('/keygate/v1/spend', keyAuth<AppEnv>(deps.resolver, ['live', 'test']), async (c) => {
    const p = c.var.principal;
    // Test keys are never limited: the emulator answers them and nothing is billed.
    const limits =
      p.key.kind === 'test'
        ? []
        : await limitStatus(deps, p.account.id, {
            memberId: p.key.memberId,
            keyId: p.key.id,
            capCents: p.key.limitMonthlySpendCents,
          });
    return c.json(
      {
        type: 'spend_status' as const,
        user_id: p.key.memberId,
        api_key_id: p.key.id,
        currency: 'USD' as const,
        limits: limits.map(limitStatusJson),
      },
      200,
      { 'cache-control': 'private, no-store' },
    );
  });
  return app;
}
