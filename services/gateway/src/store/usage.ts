import type { RollupSums } from './calls';
import type { Sql } from './database';

/** The dimensions usage can be grouped by; each maps to a column of the rollups (or the call log). */
export type UsageDimension = 'account_id' | 'api_key_id' | 'user_id' | 'model' | 'group_id' | 'app' | 'environment';

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
}

const arr = (v: string[] | null | undefined) => (v && v.length ? v : null);

/**
 * Sums usage of the Messages API (count_tokens calls and model listings are in the call log,
 * not here) by the requested dimensions (the others come back null) and, optionally, time
 * buckets. `hourly` reads the rollups; `calls` reads the call log and is for short ranges
 * only (minute buckets), which callers bound.
 */
export function usageQueries(sql: Sql) {
  /** The summed figures of rows aliased `u`, under their `RollupSums` names. */
  const sums = (source: 'hourly' | 'calls') => sql`
    ${source === 'hourly'
      ? sql`sum(u.requests)::float8 as requests, sum(u.errors)::float8 as errors`
      : sql`count(*)::float8 as requests,
            (count(*) filter (where u.status >= 400 or u.error_type is not null))::float8 as errors`},
    sum(u.input_tokens)::float8 as input_tokens,
    sum(u.output_tokens)::float8 as output_tokens,
    sum(u.cache_creation_5m_tokens)::float8 as cache_creation_5m_tokens,
    sum(u.cache_creation_1h_tokens)::float8 as cache_creation_1h_tokens,
    sum(u.cache_read_input_tokens)::float8 as cache_read_input_tokens,
    sum(u.web_search_requests)::float8 as web_search_requests`;

  function run(q: UsageQuery, source: 'hourly' | 'calls'): Promise<UsageRow[]> {
    const g = (d: UsageDimension) => q.groupBy.includes(d);
    const f = q.filters ?? {};
    const [keyIds, memberIds, models, groupIds] = [arr(f.keyIds), arr(f.memberIds), arr(f.models), arr(f.groupIds)];
    const from =
      source === 'hourly'
        ? sql`from usage_hourly u left join api_keys k on k.id = u.key_id
              where u.endpoint = 'messages' and u.hour >= ${q.from} and u.hour < ${q.to}`
        : sql`from calls u left join api_keys k on k.id = u.key_id
              where u.endpoint = 'messages' and u.created_at >= ${q.from} and u.created_at < ${q.to}`;
    const time = source === 'hourly' ? sql`u.hour` : sql`u.created_at`;
    const app = source === 'hourly' ? sql`k.app` : sql`u.app`;
    const environment = source === 'hourly' ? sql`k.environment` : sql`u.environment`;
    const zone = q.bucketSeconds === 86_400 && q.timeZone && q.timeZone !== 'UTC' ? q.timeZone : null;
    return sql<UsageRow[]>`
      select
        case when ${q.bucketSeconds}::float8 is null then null
             when ${zone}::text is not null then date_trunc('day', ${time}, ${zone}::text)
             else to_timestamp(floor(extract(epoch from ${time}) / ${q.bucketSeconds}::float8) * ${q.bucketSeconds}::float8) end as bucket,
        case when ${g('account_id')} then u.account_id end as account_id,
        case when ${g('api_key_id')} then u.key_id end as api_key_id,
        case when ${g('user_id')} then u.member_id end as user_id,
        case when ${g('model')} then u.model end as model,
        case when ${g('group_id')} then u.group_id end as group_id,
        case when ${g('app')} then ${app} end as app,
        case when ${g('environment')} then ${environment} end as environment,
        ${sums(source)}
      ${from}
        and (${q.accountId}::text is null or u.account_id = ${q.accountId})
        and (${keyIds}::text[] is null or u.key_id = any(${keyIds}::text[]))
        and (${memberIds}::text[] is null or u.member_id = any(${memberIds}::text[]))
        and (${models}::text[] is null or u.model = any(${models}::text[]))
        and (${groupIds}::text[] is null or u.group_id = any(${groupIds}::text[]))
        and (not ${q.excludeTestKeys ?? false} or k.kind is distinct from 'test')
      group by 1, 2, 3, 4, 5, 6, 7, 8
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
               null as app, null as environment, ${sums('hourly')}
        from usage_hourly u where u.key_id = ${keyId} and u.hour >= ${since} and u.endpoint = 'messages'
        group by u.key_id, u.model`;
    },
  };
}
