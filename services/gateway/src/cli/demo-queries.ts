import type { Sql } from '../store';

/** What the demo's account recorded in the call log, by group and model. */
export function recordedUsage(sql: Sql, accountId: string) {
  return sql`
    select coalesce(group_id, '-') as group, model, count(*)::int as calls, sum(input_tokens)::int as input,
           sum(output_tokens)::int as output, sum(cache_read_input_tokens)::int as cache_read
    from calls where account_id = ${accountId} group by 1, 2 order by 1, 2`;
}
