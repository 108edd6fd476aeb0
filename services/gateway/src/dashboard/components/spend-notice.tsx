/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { FC } from 'hono/jsx';
import { effectiveReport } from '../../budgets/effective';
import { periodOf } from '../../budgets/period';
import { capStatus } from '../../budgets/spend-status';
import { WARN_AT } from '../../budgets/spend-limits';
import type { DashboardDeps } from '../env';

/** A spend limit someone is at least halfway through this period. */
export interface SpendWarning {
  memberId: string;
  who: string;
  period: string;
  limitCents: number;
  spentCents: number;
  percent: number;
  resetsAt: Date;
  /** What is nearly spent, when not a spend limit of the period (a key's own cap). */
  what?: string;
}

/**
 * The spend limits at or past their first warning (50%) this period: one member's (`memberId`),
 * or every member's for an admin (null). Fullest first.
 */
export async function spendWarnings(deps: DashboardDeps, accountId: string, memberId: string | null) {
  const rows = await effectiveReport(deps, accountId, {
    memberIds: memberId ? [memberId] : null,
    periods: null,
  });
  const now = deps.clock();
  const out: SpendWarning[] = [];
  for (const r of rows) {
    if (r.amountCents === null || r.kind !== 'member') continue;
    const percent = r.amountCents > 0 ? (r.spentCents / r.amountCents) * 100 : 100;
    if (percent < WARN_AT[0]!) continue;
    out.push({
      memberId: r.principalId,
      who: r.name,
      period: r.period,
      limitCents: r.amountCents,
      spentCents: r.spentCents,
      percent,
      resetsAt: new Date(periodOf(r.period, now).end),
    });
  }
  out.push(...(await capWarnings(deps, accountId, memberId)));
  return out.sort((a, b) => b.percent - a.percent);
}

/** Keys' own monthly spend caps at or past 50%: the member's keys, or every key for an admin. */
async function capWarnings(deps: DashboardDeps, accountId: string, memberId: string | null) {
  const keys = await deps.store.keys.list(accountId, { status: 'active', memberId }, { limit: 1000 });
  const out: SpendWarning[] = [];
  for (const k of keys.rows) {
    if (k.limitMonthlySpendCents == null || k.kind === 'test') continue;
    const s = await capStatus(deps, accountId, k.id, k.limitMonthlySpendCents);
    if (s.percent < WARN_AT[0]!) continue;
    out.push({
      memberId: k.memberId ?? k.id,
      who: k.name,
      period: s.period,
      limitCents: s.limitCents,
      spentCents: s.spentCents,
      percent: s.percent,
      resetsAt: s.resetsAt,
      what: `monthly spend cap of key ${k.name}`,
    });
  }
  return out;
}

const dollars = (cents: number) => `$${(cents / 100).toFixed(2)}`;
const day = (d: Date) => d.toISOString().slice(0, 10);

/** The notice a member (their own limits) or an admin (every member's) sees before the wall. */
export const SpendNotice: FC<{ warnings: SpendWarning[]; own: boolean }> = ({ warnings, own }) => {
  if (warnings.length === 0) return null;
  const full = warnings.some((w) => w.percent >= 100);
  return (
    <aside
      class={`banner standing ${full ? 'stop' : 'soon'}`}
      aria-labelledby="spend-notice-title"
      data-spend-notice
    >
      <h2 id="spend-notice-title">{full ? 'Spend limit reached' : 'Spend limit nearing'}</h2>
      {warnings.map((w) => (
        <p data-spend-warning={`${w.memberId}:${w.period}`}>
          {own ? 'You have' : `${w.who} has`} used {Math.floor(w.percent)}% of {own ? 'your' : 'their'}{' '}
          {w.what ?? `${w.period} spend limit`}: {dollars(w.spentCents)} of {dollars(w.limitCents)}, resets{' '}
          {day(w.resetsAt)}
          {w.percent >= 100 ? '. Calls are refused until then, or until an admin raises it.' : '.'}
        </p>
      ))}
    </aside>
  );
};
