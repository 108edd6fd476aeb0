import type { RollupSums } from '../call-log/call-queries';
import type { Sql } from '../store/database';

/** One agent's usage of one model in one Claude Code session on one UTC day. */
export interface AgentRow extends RollupSums {
  day: Date;
  member_id: string | null;
  key_id: string | null;
  session_id: string | null;
  agent_id: string | null;
  parent_agent_id: string | null;
  model: string | null;
  first_at: Date;
  /** The key is a test key: its calls cost nothing. */
  test: boolean;
}

export function agentTreeQueries(sql: Sql) {
  return {
    /**
     * The Claude Code calls of one account in [from, to) by day, actor, session (the request
     * group), agent and model: what the session and agent-tree report sums. Reads the call log
     * through the partial index on Claude Code calls.
     */
    async rows(accountId: string, from: Date, to: Date, memberId: string | null = null): Promise<AgentRow[]> {
      return sql<AgentRow[]>`
        select date_trunc('day', c.created_at, 'UTC') as day, c.member_id, c.key_id, c.group_id as session_id,
               c.agent_id, c.parent_agent_id, c.model, min(c.created_at) as first_at,
               coalesce((select k.kind = 'test' from api_keys k where k.id = c.key_id), false) as test,
               count(*)::float8 as requests,
               (count(*) filter (where c.status >= 400 or c.error_type is not null))::float8 as errors,
               coalesce(sum(c.input_tokens), 0)::float8 as input_tokens,
               coalesce(sum(c.output_tokens), 0)::float8 as output_tokens,
               coalesce(sum(c.cache_creation_5m_tokens), 0)::float8 as cache_creation_5m_tokens,
               coalesce(sum(c.cache_creation_1h_tokens), 0)::float8 as cache_creation_1h_tokens,
               coalesce(sum(c.cache_read_input_tokens), 0)::float8 as cache_read_input_tokens,
               coalesce(sum(c.web_search_requests), 0)::float8 as web_search_requests
        from calls c
        where c.account_id = ${accountId} and c.client = 'claude_code' and c.endpoint = 'messages'
          and c.created_at >= ${from} and c.created_at < ${to}
          ${memberId === null ? sql`` : sql`and c.member_id = ${memberId}`}
        group by 1, 2, 3, 4, 5, 6, 7
        order by 1, 2, 3, 4, min(c.created_at)`;
    },
  };
}
