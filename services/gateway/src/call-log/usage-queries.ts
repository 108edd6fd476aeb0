import type { RollupSums } from './call-queries';
import type { Sql } from '../store/database';

/** The dimensions usage can be grouped by; each maps to a column of the rollups (or the call log). */
export type UsageDimension =
  | 'account_id'
  | 'api_key_id'
  | 'user_id'
  | 'model'
  | 'group_id'
  | 'app'
  | 'environment';

export interface UsageFilters {
  keyIds?: string[] | null;
  memberIds?: string[] | null;
  models?: string[] | null;
  groupIds?: string[] | null;
}

export interface UsageQuery {
  /** null: every account (the operator's view). */
  accountId: string | null;
  from: Date;
  to: Date;
  /** Bucket width in seconds; null sums the whole range. */
  bucketSeconds: number | null;
  /** Day buckets (86,400 s) start at local midnight in this IANA zone instead of UTC's. */
  timeZone?: string | null;
  groupBy: readonly UsageDimension[];
  filters?: UsageFilters;
  /** Cost reports leave out test keys: the emulator answers them and nobody is billed. */
  excludeTestKeys?: boolean;
  /**
   * Also group by what decides the price (UTC day, speed, inference geo, batch, prompt band), so
   * the caller can derive cost row by row (pricing/prices.ts callCost). Usage reports leave it off.
   */
  pricing?: boolean;
}

export interface UsageRow extends RollupSums {
  bucket: Date | null;
  account_id: string | null;
  api_key_id: string | null;
  user_id: string | null;
  model: string | null;
  group_id: string | null;
  app: string | null;
  environment: string | null;
  /** Present with `pricing`: the UTC day and the price-deciding dimensions of the row. */
  price_day?: Date | null;
  speed?: string | null;
  service_tier?: string | null;
  inference_geo?: string | null;
  batch?: boolean | null;
  prompt_band?: number | null;
}

const arr = (v: string[] | null | undefined) => (v?.length ? v : null);

/**
 * Sums usage of the Messages API (count_tokens calls and model listings are in the call log,
 * not here) by the requested dimensions (the others come back null) and, optionally, time
 * buckets. `hourly` reads the rollups; `calls` reads the call log and is for short ranges
 * only (minute buckets), which callers bound.
 */
export function usageQueries(sql: Sql) {
  /** The summed figures of rows aliased `u`, under their `RollupSums` names. */
  const sums = (source: 'hourly' | 'calls') => sql`
    ${
      source === 'hourly'
        ? sql`sum(u.requests)::float8 as requests, sum(u.errors)::float8 as errors`
        : sql`count(*)::float8 as requests,
            (count(*) filter (where u.status >= 400 or u.error_type is not null))::float8 as errors`
    },
    sum(u.input_tokens)::float8 as input_tokens,
    sum(u.output_tokens)::float8 as output_tokens,
    sum(u.cache_creation_5m_tokens)::float8 as cache_creation_5m_tokens,
    sum(u.cache_creation_1h_tokens)::float8 as cache_creation_1h_tokens,
    sum(u.cache_read_input_tokens)::float8 as cache_read_input_tokens,
    sum(u.web_search_requests)::float8 as web_search_requests`;

  /** The price-deciding columns; the call log computes the prompt band the rollups store. */
  const pricingColumns = (source: 'hourly' | 'calls') => sql`
    date_trunc('day', ${source === 'hourly' ? sql`u.hour` : sql`u.created_at`}, 'UTC') as price_day,
    u.speed, u.service_tier, u.inference_geo, u.batch,
    ${
      source === 'hourly'
        ? sql`u.prompt_band`
        : sql`case when u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens > 200000 then 200000
                   when u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens > 100000 then 100000
                   else 0 end`
    } as prompt_band,`;

  // Each condition and column is a fragment present only when the query asks for it (rather than
  // `$1 is null or …`), so a prepared statement's generic plan still uses the rollups' index.
  function run(q: UsageQuery, source: 'hourly' | 'calls'): Promise<UsageRow[]> {
    const f = q.filters ?? {};
    const hourly = source === 'hourly';
    const time = hourly ? sql`u.hour` : sql`u.created_at`;
    const joinKeys =
      q.excludeTestKeys || (hourly && (q.groupBy.includes('app') || q.groupBy.includes('environment')));
    const zone = q.bucketSeconds === 86_400 && q.timeZone && q.timeZone !== 'UTC' ? q.timeZone : null;
    const bucket =
      q.bucketSeconds === null
        ? sql`null::timestamptz`
        : zone
          ? sql`date_trunc('day', ${time}, ${zone}::text)`
          : sql`date_bin(make_interval(secs => ${q.bucketSeconds}), ${time}, timestamptz 'epoch')`;
    const column = (d: UsageDimension, expr: ReturnType<typeof sql>) =>
      q.groupBy.includes(d) ? expr : sql`null::text`;
    const anyOf = (expr: ReturnType<typeof sql>, values: string[] | null | undefined) => {
      const v = arr(values);
      return v ? sql`and ${expr} = any(${v}::text[])` : sql``;
    };
    return sql<UsageRow[]>`
      select
        ${bucket} as bucket,
        ${column('account_id', sql`u.account_id`)} as account_id,
        ${column('api_key_id', sql`u.key_id`)} as api_key_id,
        ${column('user_id', sql`u.member_id`)} as user_id,
        ${column('model', sql`u.model`)} as model,
        ${column('group_id', sql`u.group_id`)} as group_id,
        ${column('app', hourly ? sql`k.app` : sql`u.app`)} as app,
        ${column('environment', hourly ? sql`k.environment` : sql`u.environment`)} as environment,
        ${q.pricing ? pricingColumns(source) : sql``}
        ${sums(source)}
      from ${hourly ? sql`usage_hourly` : sql`calls`} u ${joinKeys ? sql`left join api_keys k on k.id = u.key_id` : sql``}
      where u.endpoint in ('messages', 'messages.batch', 'sessions.usage') and ${time} >= ${q.from} and ${time} < ${q.to}
        ${q.accountId === null ? sql`` : sql`and u.account_id = ${q.accountId}`}
        ${anyOf(sql`u.key_id`, f.keyIds)} ${anyOf(sql`u.member_id`, f.memberIds)} ${anyOf(sql`u.model`, f.models)} ${anyOf(sql`u.group_id`, f.groupIds)}
        ${q.excludeTestKeys ? sql`and k.kind is distinct from 'test'` : sql``}
      group by 1, 2, 3, 4, 5, 6, 7, 8 ${q.pricing ? sql`, 9, 10, 11, 12, 13, 14` : sql``}
      order by 1, 2, 3, 4, 5, 6, 7, 8`;
  }

  return {
    /** From the hourly rollups: never a scan of raw calls. */
    fromRollups: (q: UsageQuery) => run(q, 'hourly'),
    /** From the call log: minute buckets over a bounded range. */
    fromCalls: (q: UsageQuery) => run(q, 'calls'),

    /** A key's usage since `since`, by model: what its month-to-date spend is priced from. */
    async keyUsageByModel(keyId: string, since: Date): Promise<UsageRow[]> {
      return sql<UsageRow[]>`
        select null as bucket, null as account_id, u.key_id as api_key_id, null as user_id, u.model, null as group_id,
               null as app, null as environment, ${pricingColumns('hourly')} ${sums('hourly')}
        from usage_hourly u where u.key_id = ${keyId} and u.hour >= ${since} and u.endpoint in ('messages', 'messages.batch', 'sessions.usage')
        group by u.key_id, u.model, 9, 10, 11, 12, 13, 14`;
    },
  };
}
