import type { BudgetPeriod } from './budget-queries';

const DAY = 86_400_000;

/** One reset period of a budget, in UTC: [start, end), named by `label` (unique per kind). */
export interface Period {
  label: string;
  start: number;
  end: number;
}

/** The period of `kind` that holds `t`: a UTC day, an ISO week (from Monday), or a calendar month. */
export function periodOf(kind: BudgetPeriod, t: number): Period {
  const d = new Date(t);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (kind === 'daily') return { label: iso(day), start: day, end: day + DAY };
  if (kind === 'weekly') {
    const start = day - ((d.getUTCDay() + 6) % 7) * DAY;
    return { label: `W${iso(start)}`, start, end: start + 7 * DAY };
  }
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  return { label: iso(start).slice(0, 7), start, end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
}

const iso = (t: number) => new Date(t).toISOString().slice(0, 10);
