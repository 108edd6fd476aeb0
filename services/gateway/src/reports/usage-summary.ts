import { z } from 'zod';
import { GatewayError } from '../lib/errors';
import type { Store } from '../store';
import type { UsageDimension, UsageRow } from '../call-log/usage-queries';
import { isoSeconds } from './buckets';
import { timestamp } from './query';
import { filtersOf, reportFilters } from './params';
import { localDate, monthStart, UTC } from './time-zone';
import { type ReportFilters, type ReportPeriod, storeFilters } from './usage';
import { reportFigures } from './usage-report';

const HOUR = 3_600_000;
const MAX_DAYS = 400;

/** What a summary can be broken down by, and the row field (and label) each fills. */
const BY = {
  key: { dim: 'api_key_id', label: 'api_key_name' },
  member: { dim: 'user_id', label: 'user_email' },
  model: { dim: 'model', label: null },
  group: { dim: 'group_id', label: null },
  app: { dim: 'app', label: null },
  environment: { dim: 'environment', label: null },
  account: { dim: 'account_id', label: 'account_name' },
  day: { dim: null, label: null },
} as const satisfies Record<string, { dim: UsageDimension | null; label: string | null }>;

export type SummaryBy = keyof typeof BY;
export const ACCOUNT_SUMMARY_BY = ['key', 'member', 'day', 'model', 'group', 'app', 'environment'] as const;

export function summaryParams<const B extends readonly [SummaryBy, ...SummaryBy[]]>(by: B) {
  return z.object({
    by: z.enum(by),
    starting_at: timestamp.optional(),
    ending_at: timestamp.optional(),
    ...reportFilters,
  });
}

type Params = { by: SummaryBy; starting_at?: Date | undefined; ending_at?: Date | undefined } & Parameters<
  typeof filtersOf
>[0];

/** One line of a summary: the value summed by (a key id, a member id, a day, …), its label, its figures. */
export interface SummaryLine {
  id: string | null;
  /** The key's name, the member's email or the account's name; null for the other dimensions. */
  label: string | null;
  figures: UsageRow;
}

export interface SummaryQuery {
  /** null: every account (the operator's cross-account view). */
  accountId: string | null;
  /** Widened to whole hours: the rollups are hourly. */
  period: ReportPeriod;
  by: SummaryBy;
  filters?: ReportFilters;
}

/** [from, to) widened to whole hours, as the rollups count. */
export function wholeHours(from: Date, to: Date): { from: Date; to: Date } {
  return {
    from: new Date(Math.floor(from.getTime() / HOUR) * HOUR),
    to: new Date(Math.ceil(to.getTime() / HOUR) * HOUR),
  };
}

/**
 * Usage totals over a period by one dimension (the typed face the dashboard calls), from the
 * hourly rollups; by day, days are those of the period's zone. Lines by anything but day come
 * busiest first.
 */
export async function summaryLines(
  store: Pick<Store, 'usage' | 'keys' | 'members' | 'accounts'>,
  q: SummaryQuery,
): Promise<SummaryLine[]> {
  const { from, to } = wholeHours(q.period.from, q.period.to);
  const { dim } = BY[q.by];
  const rows = await store.usage.fromRollups({
    accountId: q.accountId,
    from,
    to,
    bucketSeconds: q.by === 'day' ? 86_400 : null,
    timeZone: q.period.timeZone,
    groupBy: dim ? [dim] : [],
    filters: storeFilters(q.filters),
  });
  const labels = await labelsFor(store, q.accountId, q.by, rows);
  const lines = rows.map((row) => {
    const id = dim ? row[dim] : localDate(q.period.timeZone, row.bucket!.getTime());
    return { id, label: id ? (labels.get(id) ?? null) : null, figures: row };
  });
  if (q.by !== 'day') lines.sort((a, b) => b.figures.requests - a.figures.requests);
  return lines;
}

/**
 * A report's [starting_at, ending_at) in whole hours: by default this month (in `timeZone`) to
 * now; a 400 when it runs backwards or past 400 days.
 */
export function rangeOf(
  q: { starting_at?: Date | undefined; ending_at?: Date | undefined },
  now: number,
  timeZone: string,
): { from: Date; to: Date } {
  const { from, to } = wholeHours(
    q.starting_at ?? new Date(monthStart(timeZone, now)),
    q.ending_at ?? new Date(now),
  );
  if (to <= from) throw new GatewayError('invalid_request_error', 'ending_at: must be after starting_at.');
  if (to.getTime() - from.getTime() > MAX_DAYS * 24 * HOUR)
    throw new GatewayError('invalid_request_error', `ending_at: a report covers at most ${MAX_DAYS} days.`);
  return { from, to };
}

/**
 * `GET …/usage_summary`: usage totals over a range by one dimension. The default range is the
 * current month to now, in the reporting zone. `accountId` null sums every account.
 */
export async function usageSummary(
  store: Pick<Store, 'usage' | 'keys' | 'members' | 'accounts'>,
  accountId: string | null,
  q: Params,
  now: number,
  timeZone = UTC,
) {
  const { from, to } = rangeOf(q, now, timeZone);
  const { dim, label } = BY[q.by];
  const lines = await summaryLines(store, {
    accountId,
    period: { from, to, timeZone },
    by: q.by,
    filters: filtersOf(q),
  });
  return {
    type: 'usage_summary' as const,
    by: q.by,
    time_zone: timeZone,
    starting_at: isoSeconds(from),
    ending_at: isoSeconds(to),
    data: lines.map((l) => ({
      [dim ?? 'day']: l.id,
      ...(label ? { [label]: l.label } : {}),
      ...reportFigures(l.figures),
    })),
  };
}

function labelsFor(
  store: Pick<Store, 'keys' | 'members' | 'accounts'>,
  accountId: string | null,
  by: SummaryBy,
  rows: UsageRow[],
): Promise<Map<string, string>> {
  const ids = (pick: (r: UsageRow) => string | null) => [
    ...new Set(rows.map(pick).filter((v): v is string => !!v)),
  ];
  if (by === 'key')
    return store.keys.names(
      accountId,
      ids((r) => r.api_key_id),
    );
  if (by === 'member')
    return store.members.emails(
      accountId,
      ids((r) => r.user_id),
    );
  if (by === 'account') return store.accounts.names(ids((r) => r.account_id));
  return Promise.resolve(new Map());
}
