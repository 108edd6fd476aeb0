import type { Prices } from '../pricing/prices';
import { GatewayError } from '../lib/errors';
import { newId } from '../lib/ids';
import type { BudgetFilter, BudgetPatch, BudgetPeriod, BudgetRecord, BudgetScope } from './budget-queries';
import type { PageQuery, Store } from '../store';
import type { UsageRow } from '../call-log/usage-queries';
import { periodOf } from './period';

/** Whose data and who acts: an account API scope. */
export interface BudgetActor {
  accountId: string;
  actor: string;
}

export interface NewBudgetInput {
  name?: string | undefined;
  scope: BudgetScope;
  targetId?: string | undefined;
  limitCents: number;
  hardCap: boolean;
  hold?: 'expected' | 'ceiling' | undefined;
  thresholds: number[];
  period: BudgetPeriod;
}

/** A budget's current period: what the dashboard and the API show. */
export interface BudgetProgress {
  spentCents: number;
  limitCents: number;
  /** Spent as a percent of the limit (null for a limit of 0). */
  percent: number | null;
  periodStart: Date;
  periodEnd: Date;
  /** True when a hard cap is reached: calls of its scope are refused until `periodEnd`. */
  exhausted: boolean;
  thresholds: { percent: number; crossedAt: Date | null }[];
}

export type BudgetWithProgress = BudgetRecord & { progress: BudgetProgress };

type Deps = { store: Pick<Store, 'budgets' | 'members' | 'keys'>; clock: () => number; prices: Prices };

const notFound = (id: string) => new GatewayError('not_found_error', `No budget with id '${id}'.`);

async function checkTarget(
  deps: Deps,
  accountId: string,
  scope: BudgetScope,
  targetId: string | undefined,
): Promise<void> {
  if (scope === 'account') {
    if (targetId)
      throw new GatewayError(
        'invalid_request_error',
        'target_id: an account budget has no target; leave it out.',
      );
    return;
  }
  if (!targetId)
    throw new GatewayError(
      'invalid_request_error',
      `target_id: a ${scope} budget names its ${scope === 'user' ? 'member (user_…)' : 'key (key_…)'}.`,
    );
  if (scope === 'user') {
    const m = await deps.store.members.get(accountId, targetId);
    if (m?.status !== 'active')
      throw new GatewayError('not_found_error', `target_id: no active member '${targetId}' in this account.`);
  } else {
    const k = await deps.store.keys.get(accountId, targetId);
    if (!k) throw new GatewayError('not_found_error', `target_id: no API key '${targetId}' in this account.`);
    if (k.kind === 'admin')
      throw new GatewayError(
        'invalid_request_error',
        'target_id: admin keys cannot call models, so they take no budget.',
      );
  }
}

export async function createBudget(
  deps: Deps,
  who: BudgetActor,
  input: NewBudgetInput,
): Promise<BudgetWithProgress> {
  await checkTarget(deps, who.accountId, input.scope, input.targetId);
  const id = newId('bdg');
  const budget = await deps.store.budgets.create(
    {
      id,
      accountId: who.accountId,
      scope: input.scope,
      targetId: input.targetId ?? null,
      name:
        input.name ??
        `${input.period} ${input.scope === 'api_key' ? 'key' : input.scope === 'user' ? 'member' : 'account'} budget`,
      limitCents: input.limitCents,
      hardCap: input.hardCap,
      hold: input.hold ?? 'expected',
      thresholds: input.thresholds,
      period: input.period,
      createdBy: who.actor,
    },
    {
      actor: who.actor,
      action: 'budget.create',
      targetId: id,
      details: {
        scope: input.scope,
        target_id: input.targetId ?? null,
        limit_cents: input.limitCents,
        period: input.period,
      },
    },
  );
  return (await withProgress(deps, [budget]))[0]!;
}

export async function updateBudget(
  deps: Deps,
  who: BudgetActor,
  id: string,
  patch: BudgetPatch,
): Promise<BudgetWithProgress> {
  const audit = { actor: who.actor, action: 'budget.update', targetId: id, details: { ...patch } };
  const budget = await deps.store.budgets.update(who.accountId, id, patch, audit);
  if (!budget) throw notFound(id);
  return (await withProgress(deps, [budget]))[0]!;
}

export async function deleteBudget(deps: Deps, who: BudgetActor, id: string): Promise<BudgetRecord> {
  const budget = await deps.store.budgets.remove(who.accountId, id, {
    actor: who.actor,
    action: 'budget.delete',
    targetId: id,
  });
  if (!budget) throw notFound(id);
  return budget;
}

/** One budget with its progress this period (404 when not in the account). */
export async function getBudget(deps: Deps, accountId: string, id: string): Promise<BudgetWithProgress> {
  const budget = await deps.store.budgets.get(accountId, id);
  if (!budget) throw notFound(id);
  return (await withProgress(deps, [budget]))[0]!;
}

/** A page of an account's budgets with their progress: what the dashboard renders. */
export async function listBudgets(
  deps: Deps,
  accountId: string,
  filter: BudgetFilter,
  page: PageQuery,
): Promise<{ rows: BudgetWithProgress[]; hasMore: boolean }> {
  const p = await deps.store.budgets.list(accountId, filter, page);
  return { rows: await withProgress(deps, p.rows), hasMore: p.hasMore };
}

/**
 * Spend this period from the rollups (exact to the last written call, as the reports are),
 * and when each threshold was crossed.
 */
async function withProgress(deps: Deps, budgets: BudgetRecord[]): Promise<BudgetWithProgress[]> {
  const now = deps.clock();
  const periods = budgets.map((b) => periodOf(b.period, now));
  const spent = await Promise.all(
    budgets.map(async (b, i) => {
      const rows = await deps.store.budgets.spendByModel(
        b.accountId,
        b.scope,
        b.targetId,
        new Date(periods[i]!.start),
        new Date(periods[i]!.end),
      );
      return rows.reduce((sum, r) => sum + deps.prices.rowCost(r as UsageRow).cents, 0);
    }),
  );
  const crossings = await deps.store.budgets.crossings(
    budgets.map((b) => b.id),
    periods.map((p) => new Date(p.start)),
  );
  return budgets.map((b, i) => {
    const spentCents = Math.round(spent[i]! * 1e6) / 1e6;
    const crossedAt = (t: number) =>
      crossings.find((c) => c.budgetId === b.id && c.threshold === t)?.crossedAt ?? null;
    return {
      ...b,
      progress: {
        spentCents,
        limitCents: b.limitCents,
        percent: b.limitCents > 0 ? Math.round((spentCents / b.limitCents) * 10_000) / 100 : null,
        periodStart: new Date(periods[i]!.start),
        periodEnd: new Date(periods[i]!.end),
        exhausted: b.hardCap && spentCents >= b.limitCents,
        thresholds: b.thresholds.map((t) => ({ percent: t, crossedAt: crossedAt(t) })),
      },
    };
  });
}
