import type { RollupSums } from '../call-log/call-queries';
import type { Sql } from '../store/database';

/** One actor's Claude Code usage over a range: per model, or (`total`) over all models. */
export interface ClaudeCodeRow extends RollupSums {
  member_id: string | null;
  /** The key, for calls of keys that belong to no member. */
  key_id: string | null;
  model: string | null;
  /** The actor's total over all models (the row that carries the session count). */
  total: boolean;
  /** Distinct sessions (request groups) of the row's calls. */
  sessions: number;
}

export function claudeCodeQueries(sql: Sql) {
  return {
    /**
     * The Claude Code calls of one account in [from, to), by actor (member, else key) and model,
     * plus one total row per actor with its session count. Reads the call log through the
     * partial index on Claude Code calls: one account's calls of one day.
     */
    async byActor(accountId: string, from: Date, to: Date): Promise<ClaudeCodeRow[]> {
      const messages = sql`c.endpoint = 'messages'`;
      const keyOfNoMember = sql`case when c.member_id is null then c.key_id end`;
      return sql<ClaudeCodeRow[]>`
        select c.member_id, ${keyOfNoMember} as key_id, c.model, grouping(c.model) = 1 as total,
               count(distinct c.group_id)::float8 as sessions,
               (count(*) filter (where ${messages}))::float8 as requests,
               (count(*) filter (where ${messages} and (c.status >= 400 or c.error_type is not null)))::float8 as errors,
               coalesce(sum(c.input_tokens) filter (where ${messages}), 0)::float8 as input_tokens,
               coalesce(sum(c.output_tokens) filter (where ${messages}), 0)::float8 as output_tokens,
               coalesce(sum(c.cache_creation_5m_tokens) filter (where ${messages}), 0)::float8 as cache_creation_5m_tokens,
               coalesce(sum(c.cache_creation_1h_tokens) filter (where ${messages}), 0)::float8 as cache_creation_1h_tokens,
               coalesce(sum(c.cache_read_input_tokens) filter (where ${messages}), 0)::float8 as cache_read_input_tokens,
               coalesce(sum(c.web_search_requests) filter (where ${messages}), 0)::float8 as web_search_requests
        from calls c
        where c.account_id = ${accountId} and c.client = 'claude_code' and c.created_at >= ${from} and c.created_at < ${to}
          -- Live keys only, as every cost report: test keys' calls cost nothing.
          and not exists (select 1 from api_keys k where k.id = c.key_id and k.kind = 'test')
        group by grouping sets ((c.member_id, ${keyOfNoMember}), (c.member_id, ${keyOfNoMember}, c.model))
        order by 1, 2, 3`;
    },
  };
}
