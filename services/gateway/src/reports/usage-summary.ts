import { z } from 'zod';
import { GatewayError } from '../lib/errors';
import type { Store, UsageDimension, UsageRow } from '../store';
import { isoSeconds } from './buckets';
import { timestamp } from './query';
import { filtersOf, reportFilters } from './params';
import { localDate, monthStart, UTC } from './time-zone';
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

/**
 * Usage totals over a range by one dimension, from the hourly rollups (the range widens to
 * whole hours). The default range is the current month to now; days and months are those of
 * the reporting zone. `accountId` null sums every account: the operator's cross-account view.
 */
export async function usageSummary(
  store: Pick<Store, 'usage' | 'keys' | 'members' | 'accounts'>,
  accountId: string | null,
  q: Params,
  now: number,
  timeZone = UTC,
) {
  const from = new Date(Math.floor((q.starting_at?.getTime() ?? monthStart(timeZone, now)) / HOUR) * HOUR);
  const to = new Date(Math.ceil((q.ending_at?.getTime() ?? now) / HOUR) * HOUR);
  if (to <= from) throw new GatewayError('invalid_request_error', 'ending_at: must be after starting_at.');
  if (to.getTime() - from.getTime() > MAX_DAYS * 24 * HOUR)
    throw new GatewayError('invalid_request_error', `ending_at: a summary covers at most ${MAX_DAYS} days.`);
  const { dim, label } = BY[q.by];
  const rows = await store.usage.fromRollups({
    accountId,
    from,
    to,
    bucketSeconds: q.by === 'day' ? 86_400 : null,
    timeZone,
    groupBy: dim ? [dim] : [],
    filters: filtersOf(q),
  });
  const labels = await labelsFor(store, accountId, q.by, rows);
  const data = rows.map((row) => {
    const value = dim ? row[dim] : localDate(timeZone, row.bucket!.getTime());
    return {
      [dim ?? 'day']: value,
      ...(label ? { [label]: value ? (labels.get(value) ?? null) : null } : {}),
      ...reportFigures(row),
    };
  });
  if (q.by !== 'day') data.sort((a, b) => b.requests - a.requests);
  return {
    type: 'usage_summary' as const,
    by: q.by,
    time_zone: timeZone,
    starting_at: isoSeconds(from),
    ending_at: isoSeconds(to),
    data,
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
