import { addToRollups } from '../../services/gateway/src/call-log/call-queries';
import type { Sql } from '../../services/gateway/src/store/index';

export const SHAPE = { accounts: 10, membersPerAccount: 5, keys: 200, groups: 20_000, days: 90 };

/**
 * A request group is a burst of consecutive calls (a tool loop, a Claude Code session) made
 * with one key, mostly on one model: 1,000,000 calls make 20,000 groups of 50 calls, each a few
 * minutes long; three in ten such bursts carry no group id.
 */
const CALLS_PER_GROUP = 50;

const pad = (n: number, w: number) => String(n).padStart(w, '0');
export const accountId = (a: number) => `acct_bench${pad(a, 2)}`;
export const memberId = (a: number, m: number) => `user_bench${pad(a, 2)}${m}`;
export const keyId = (k: number) => `key_bench${pad(k, 3)}`;

/** 10 accounts on the team plan, 5 members each, 200 keys (key k in account k % 10; every fourth key belongs to no member). */
export async function seedAccounts(sql: Sql): Promise<void> {
  const { accounts, membersPerAccount, keys } = SHAPE;
  await sql`
    insert into accounts (id, name, plan_id, trial_ends_at, created_at)
    select 'acct_bench' || lpad(a::text, 2, '0'), 'Bench ' || a, 'team', now() - interval '200 days', now() - interval '200 days'
    from generate_series(0, ${accounts - 1}) a`;
  await sql`
    insert into members (id, account_id, email, name, role, created_at)
    select 'user_bench' || lpad(a::text, 2, '0') || m, 'acct_bench' || lpad(a::text, 2, '0'), 'm' || m || '@a' || a || '.bench', 'Member ' || m,
           case when m = 0 then 'admin' else 'developer' end, now() - interval '200 days'
    from generate_series(0, ${accounts - 1}) a, generate_series(0, ${membersPerAccount - 1}) m`;
  await sql`
    insert into api_keys (id, account_id, member_id, kind, name, app, environment, hint, created_at)
    select 'key_bench' || lpad(k::text, 3, '0'), 'acct_bench' || lpad((k % 10)::text, 2, '0'),
           case when k % 4 = 3 then null else 'user_bench' || lpad((k % 10)::text, 2, '0') || ((k / 10) % 5) end,
           case when k % 20 = 19 then 'test' else 'live' end, 'bench key ' || k,
           (array['web', 'ci', 'batch'])[1 + k % 3], (array['prod', 'dev'])[1 + k % 2], 'kg_live_…' || lpad(k::text, 4, '0'),
           now() - interval '200 days'
    from generate_series(0, ${keys - 1}) k`;
}

/**
 * Inserts the calls numbered [lo, hi) whose number is (or, with `every` negative, is not) a
 * multiple of |every|, spread evenly over the 90 days before `end` in number order, and folds
 * them into the hourly rollups in the same statement, by the writer's key and with its upsert.
 */
export async function seedCalls(
  sql: Sql,
  o: { lo: number; hi: number; total: number; end: Date; every: number },
): Promise<number> {
  const start = new Date(o.end.getTime() - SHAPE.days * 86_400_000);
  const step = Math.abs(o.every);
  const [row] = await sql<{ n: number }[]>`
    with n as (
      select i, i / ${CALLS_PER_GROUP} as g, ((hg / 65536) % 200)::int as k, ((hg / 1024) % 10)::int as grouped, ((hi / 1024) % 1000)::int as r
      from generate_series(${o.lo}::int, ${o.hi - 1}::int) i,
           lateral (select ((i / ${CALLS_PER_GROUP})::bigint * 2654435761) % 4294967296 as hg, (i::bigint * 2654435761) % 4294967296 as hi) x
      where (i % ${step} = 0) = ${o.every > 0}
    ), v as (
      select i, g, k, r, grouped, k % 10 as a,
             50 + (i * 13) % 2000 as input, 10 + (i * 7) % 800 as output,
             case when i % 3 = 0 then (i * 11) % 5000 else 0 end as cache_read,
             case when i % 7 = 0 then 300 else 0 end as w5m, case when i % 11 = 0 then 200 else 0 end as w1h,
             case when i % 97 = 0 then 1 else 0 end as searches,
             case when r < 10 then 429 when r < 15 then 529 when r < 18 then 500 else 200 end as status
      from n
    ), ins as (
      insert into calls (id, account_id, key_id, member_id, app, environment, group_id, client, endpoint, model, stream, status, error_type,
                         input_tokens, output_tokens, cache_creation_input_tokens, cache_creation_5m_tokens, cache_creation_1h_tokens,
                         cache_read_input_tokens, web_search_requests, usage, retry_count, latency_ms, ttfb_ms, partial, created_at)
      select 'req_bench' || lpad(i::text, 8, '0'), 'acct_bench' || lpad(a::text, 2, '0'), 'key_bench' || lpad(k::text, 3, '0'),
             case when k % 4 = 3 then null else 'user_bench' || lpad(a::text, 2, '0') || ((k / 10) % 5) end,
             (array['web', 'ci', 'batch'])[1 + k % 3], (array['prod', 'dev'])[1 + k % 2],
             case when grouped < 7 then 'g_' || g end,
             case when k % 5 = 0 then 'claude_code' end,
             case when r % 50 = 49 then 'count_tokens' else 'messages' end,
             case when r % 10 = 0 then 'claude-haiku-4-5' else (array['claude-opus-4-5', 'claude-sonnet-4-5'])[1 + k % 2] end, r % 2 = 0, status,
             case status when 429 then 'rate_limit_error' when 529 then 'overloaded_error' when 500 then 'api_error'
                         else case when r between 18 and 20 then 'client_closed' end end,
             input, output, w5m + w1h, w5m, w1h, cache_read, searches,
             jsonb_build_object('input_tokens', input, 'output_tokens', output, 'cache_read_input_tokens', cache_read,
                                'cache_creation_input_tokens', w5m + w1h,
                                'cache_creation', jsonb_build_object('ephemeral_5m_input_tokens', w5m, 'ephemeral_1h_input_tokens', w1h),
                                'server_tool_use', jsonb_build_object('web_search_requests', searches)),
             case when status = 429 then 1 else 0 end, 200 + (i * 17) % 3000, 50 + (i * 5) % 400, r between 18 and 20,
             ${start}::timestamptz + (i::float8 / ${o.total}::float8) * ${SHAPE.days}::float8 * interval '1 day' + ((i * 31) % 60) * interval '1 second'
      from v
      returning *
    ), rolled as (
      insert into usage_hourly (account_id, endpoint, hour, key_id, member_id, model, group_id, requests, errors, input_tokens, output_tokens,
                                cache_creation_5m_tokens, cache_creation_1h_tokens, cache_read_input_tokens, web_search_requests)
      select account_id, endpoint, to_timestamp(floor(extract(epoch from created_at) / 3600) * 3600), key_id, member_id, model, group_id, count(*),
             count(*) filter (where status >= 400 or error_type is not null), sum(input_tokens), sum(output_tokens),
             sum(cache_creation_5m_tokens), sum(cache_creation_1h_tokens), sum(cache_read_input_tokens), sum(web_search_requests)
      from ins group by 1, 2, 3, 4, 5, 6, 7
      ${addToRollups(sql)}
      returning 1
    )
    select (select count(*) from ins)::int as n`;
  return row!.n;
}

/** The rollups must say what the call log says: totals per account, both ways. */
export async function checkRollups(sql: Sql): Promise<void> {
  const diff = await sql`
    select c.account_id from
      (select account_id, count(*) as n, sum(input_tokens) as t from calls group by 1) c
      full join (select account_id, sum(requests) as n, sum(input_tokens) as t from usage_hourly group by 1) u using (account_id)
    where c.n is distinct from u.n or c.t is distinct from u.t`;
  if (diff.length)
    throw new Error(`rollups disagree with the call log for ${diff.map((d) => d.account_id).join(', ')}`);
}
