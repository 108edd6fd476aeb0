import { rowCounts, TOKEN_TYPES, type Priced, type TokenType } from '../pricing/prices';
import type { Store } from '../store';
import type { UsageDimension, UsageRow } from '../call-log/usage-queries';

/**
 * The reports' typed in-process face: typed parameters in, typed rows out. The account API's
 * routes parse the provider's query parameters into these and serialize the rows into the
 * provider's wire shape (usage-report.ts, cost-report.ts); the dashboard calls them directly.
 */

/** What usage can be grouped by. */
export type ReportDimension = 'key' | 'member' | 'model' | 'group' | 'app' | 'environment';

/** [from, to), with day buckets starting at local midnight in `timeZone` (IANA). */
export interface ReportPeriod {
  from: Date;
  to: Date;
  timeZone: string;
}

/** Bucket width; `null` sums the whole period. */
export type ReportBucket = 'minute' | 'hour' | 'day' | null;

/** Each list narrows the report to its values; members are Keygate's (the provider's users). */
export interface ReportFilters {
  keyIds?: readonly string[] | null;
  memberIds?: readonly string[] | null;
  models?: readonly string[] | null;
  groupIds?: readonly string[] | null;
}

export interface ReportQuery {
  /** null: every account (the operator's view). */
  accountId: string | null;
  period: ReportPeriod;
  bucket: ReportBucket;
  groupBy: readonly ReportDimension[];
  filters?: ReportFilters;
}

/** One bucket and group's figures: the dimensions not grouped by are null. */
export type UsageFiguresRow = UsageRow;

/** One priced part of a bucket and group's usage: a token type of a model, or web searches. */
export interface CostRow {
  bucket: Date | null;
  keyId: string | null;
  memberId: string | null;
  groupId: string | null;
  model: string | null;
  part: TokenType | 'web_search';
  /** USD cents at list prices (fractions kept). */
  cents: number;
}

const COLUMN: Record<ReportDimension, UsageDimension> = {
  key: 'api_key_id',
  member: 'user_id',
  model: 'model',
  group: 'group_id',
  app: 'app',
  environment: 'environment',
};

const SECONDS: Record<Exclude<ReportBucket, null>, number> = { minute: 60, hour: 3_600, day: 86_400 };

/** The filters as the store takes them: an empty list filters nothing. */
export function storeFilters(f: ReportFilters = {}) {
  const list = (v: readonly string[] | null | undefined) => (v?.length ? [...v] : null);
  return {
    keyIds: list(f.keyIds),
    memberIds: list(f.memberIds),
    models: list(f.models),
    groupIds: list(f.groupIds),
  };
}

function storeQuery(q: ReportQuery, groupBy: readonly ReportDimension[]) {
  return {
    accountId: q.accountId,
    from: q.period.from,
    to: q.period.to,
    bucketSeconds: q.bucket ? SECONDS[q.bucket] : null,
    timeZone: q.period.timeZone,
    groupBy: [...new Set(groupBy.map((d) => COLUMN[d]))],
    filters: storeFilters(q.filters),
  };
}

/**
 * Tokens and calls per bucket and group. Day and hour buckets read the hourly rollups; minute
 * buckets read the call log, so callers bound their periods (the account API: 1,440 minutes).
 */
export function usageRows(store: Pick<Store, 'usage'>, q: ReportQuery): Promise<UsageFiguresRow[]> {
  const query = storeQuery(q, q.groupBy);
  return q.bucket === 'minute' ? store.usage.fromCalls(query) : store.usage.fromRollups(query);
}

/**
 * What usage cost per bucket and group, by priced part, at the catalog's price in force for each
 * row (pricing/): live keys only (test keys are never billed). A model without a price is left
 * out here; the cost report and the dashboard name it instead.
 */
export async function costRows(
  { store, prices }: Priced<Pick<Store, 'usage'>>,
  q: ReportQuery,
): Promise<CostRow[]> {
  const rows = await store.usage.fromRollups({
    ...storeQuery(q, [...q.groupBy, 'model']),
    excludeTestKeys: true,
    pricing: true,
  });
  return rows.flatMap((row) => {
    const cost = prices.rowCost(row);
    if (!cost.priced) return [];
    const counts = rowCounts(row);
    const base = {
      bucket: row.bucket,
      keyId: row.api_key_id,
      memberId: row.user_id,
      groupId: row.group_id,
      model: row.model,
    };
    const parts: CostRow[] = TOKEN_TYPES.filter((t) => counts[t] > 0).map((t) => ({
      ...base,
      part: t,
      cents: cost.parts[t],
    }));
    if (counts.web_search_requests > 0)
      parts.push({ ...base, part: 'web_search', cents: cost.parts.web_search });
    return parts;
  });
}
