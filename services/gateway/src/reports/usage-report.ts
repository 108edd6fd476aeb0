import { z } from 'zod';
import type { Store } from '../store';
import type { UsageRow } from '../call-log/usage-queries';
import { bucketed, planBuckets, type BucketWidth } from './buckets';
import { filtersOf, groupBy, reportFilters } from './params';
import { timestamp } from './query';
import { type ReportDimension, usageRows } from './usage';

/** group_by[] values: the provider's that Keygate has (account_id: the member), plus Keygate's own. */
const GROUP_BY = ['api_key_id', 'model', 'account_id', 'user_id', 'group_id', 'app', 'environment'] as const;

export const UsageReportParams = z.object({
  starting_at: timestamp,
  ending_at: timestamp.optional(),
  bucket_width: z.enum(['1m', '1h', '1d']).default('1d'),
  group_by: groupBy(GROUP_BY),
  ...reportFilters,
  limit: z.coerce.number().int().min(1).optional(),
  page: z.string().optional(),
});

/**
 * A row's figures under the provider's usage-report names, plus Keygate's counts: `requests`
 * is every call, `errors` the calls among them that ended in an error (refusals included).
 */
export function reportFigures(r: UsageRow) {
  return {
    uncached_input_tokens: r.input_tokens,
    cache_creation: {
      ephemeral_1h_input_tokens: r.cache_creation_1h_tokens,
      ephemeral_5m_input_tokens: r.cache_creation_5m_tokens,
    },
    cache_read_input_tokens: r.cache_read_input_tokens,
    output_tokens: r.output_tokens,
    server_tool_use: { web_search_requests: r.web_search_requests },
    requests: r.requests,
    errors: r.errors,
  };
}

function result(r: UsageRow) {
  return {
    ...reportFigures(r),
    account_id: r.user_id,
    api_key_id: r.api_key_id,
    workspace_id: null,
    model: r.model,
    service_tier: null,
    context_window: null,
    inference_geo: null,
    user_id: r.user_id,
    group_id: r.group_id,
    app: r.app,
    environment: r.environment,
  };
}

/**
 * `GET /v1/organizations/usage_report/messages`. Day and hour buckets read the hourly
 * rollups; minute buckets read the call log, over at most 1,440 minutes per page. Day buckets
 * start at local midnight in the account's reporting zone (reports/time-zone.ts).
 */
export async function usageReport(
  store: Pick<Store, 'usage'>,
  accountId: string,
  q: z.infer<typeof UsageReportParams>,
  now: number,
  timeZone?: string,
) {
  const page = planBuckets({
    startingAt: q.starting_at,
    endingAt: q.ending_at ?? null,
    width: q.bucket_width as BucketWidth,
    limit: q.limit,
    page: q.page,
    now,
    timeZone,
  });
  const dimension = {
    api_key_id: 'key',
    account_id: 'member',
    user_id: 'member',
    group_id: 'group',
  } as const;
  const rows = await usageRows(store, {
    accountId,
    period: { from: page.from, to: page.to, timeZone: page.zone },
    bucket: q.bucket_width === '1m' ? 'minute' : q.bucket_width === '1h' ? 'hour' : 'day',
    groupBy: (q.group_by ?? []).map(
      (d) => (d in dimension ? dimension[d as keyof typeof dimension] : d) as ReportDimension,
    ),
    filters: filtersOf(q),
  });
  const results = new Map<number, ReturnType<typeof result>[]>();
  for (const row of rows) {
    const t = page.key(row.bucket!);
    if (!results.has(t)) results.set(t, []);
    results.get(t)!.push(result(row));
  }
  return bucketed(page, results);
}
