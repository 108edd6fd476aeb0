import type { Sql } from '../store/database';

/** What the gateway sign-in (claude-gateway/) keeps: the environment an admin pushes to Claude Code. */
export type ClaudeGatewayQueries = ReturnType<typeof claudeGatewayQueries>;

export function claudeGatewayQueries(sql: Sql) {
  return {
    /** The account's pushed environment ({} when none was set). */
    async env(accountId: string): Promise<Record<string, string>> {
      const [row] = await sql<{ env: Record<string, string> }[]>`
        select env from claude_code_env where account_id = ${accountId}`;
      return row?.env ?? {};
    },

    /** Replaces it; an empty one removes the row. */
    async setEnv(accountId: string, env: Record<string, string>): Promise<void> {
      if (Object.keys(env).length === 0)
        await sql`delete from claude_code_env where account_id = ${accountId}`;
      else
        await sql`insert into claude_code_env (account_id, env) values (${accountId}, ${sql.json(env)})
                  on conflict (account_id) do update set env = excluded.env, updated_at = now()`;
    },
  };
}
