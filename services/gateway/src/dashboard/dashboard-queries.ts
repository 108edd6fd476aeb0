import type { Sql } from '../store/database';

export type SessionKind = 'admin' | 'member' | 'operator';

export interface NewSession {
  tokenHash: Buffer;
  kind: SessionKind;
  accountId: string | null;
  memberId: string | null;
  keyId: string | null;
  csrfToken: string;
  expiresAt: Date;
  /** The key secret's SHA-256 (key sessions). */
  secretHash: Buffer | null;
  /** A digest of the operator token (operator sessions). */
  operatorTag: Buffer | null;
}

export interface SessionRecord {
  kind: SessionKind;
  accountId: string | null;
  memberId: string | null;
  keyId: string | null;
  csrfToken: string;
  expiresAt: Date;
}

/** Calls that ended in one error type (null: served), and how many of them were retried. */
export interface TroubleRow {
  errorType: string | null;
  /** The kind of rule that refused the calls (`rate_limit`, `spend_limit`, `budget`, …), null when none did. */
  refusal?: string | null;
  status: number;
  calls: number;
  retried: number;
  retries: number;
}

/** Retries in one request group: every retry attempt, and those spent on calls that still ended in an error. */
export interface GroupRetries {
  groupId: string;
  retries: number;
  wasted: number;
}

/** Who made a group's calls: its members and keys, and whether Claude Code did. */
export interface GroupCallers {
  groupId: string;
  memberIds: string[];
  keyIds: string[];
  claudeCode: boolean;
}

export interface TroubleFilter {
  memberId?: string | null;
  keyId?: string | null;
  model?: string | null;
  groupId?: string | null;
}

export function dashboardQueries(sql: Sql) {
  return {
    async createSession(s: NewSession): Promise<void> {
      await sql`delete from dashboard_sessions where expires_at < now()`;
      await sql`
        insert into dashboard_sessions (token_hash, kind, account_id, member_id, key_id, csrf_token, expires_at,
          secret_hash, operator_tag)
        values (${s.tokenHash}, ${s.kind}, ${s.accountId}, ${s.memberId}, ${s.keyId}, ${s.csrfToken}, ${s.expiresAt},
          ${s.secretHash}, ${s.operatorTag})`;
    },

    /**
     * A live session, read on every request (so a change shows on every instance at once):
     * not expired; an operator session opened with the operator token in force now; a key
     * session whose secret is still the key's current one (a rotation ends it, grace or not),
     * whose key is active, unexpired and undeleted, and whose member is still on the account.
     * An admin session of a member no longer an admin is downgraded to that member's view.
     */
    async session(tokenHash: Buffer, operatorTag: Buffer | null): Promise<SessionRecord | null> {
      const [row] = await sql<SessionRecord[]>`
        select case when s.kind = 'admin' and s.member_id is not null and m.role <> 'admin' then 'member' else s.kind end as kind,
               s.account_id as "accountId", s.member_id as "memberId", s.key_id as "keyId",
               s.csrf_token as "csrfToken", s.expires_at as "expiresAt"
        from dashboard_sessions s
        left join api_keys k on k.id = s.key_id
        left join members m on m.id = s.member_id
        left join accounts a on a.id = s.account_id
        where s.token_hash = ${tokenHash} and s.expires_at > now()
          and ((s.kind = 'operator' and s.operator_tag = ${operatorTag})
               or (s.kind <> 'operator' and k.deleted_at is null and k.status = 'active' and a.status = 'active'
                   and (k.expires_at is null or k.expires_at > now())
                   and (s.member_id is null or m.status = 'active')
                   and exists (select 1 from key_secrets ks
                               where ks.hash = s.secret_hash and ks.key_id = s.key_id and ks.expires_at is null)))`;
      return row ?? null;
    },

    async endSession(tokenHash: Buffer): Promise<void> {
      await sql`delete from dashboard_sessions where token_hash = ${tokenHash}`;
    },

    /** Failed and retried calls of a range by error type, read through the partial `calls_trouble` index. */
    async trouble(accountId: string, from: Date, to: Date, memberId: string | null): Promise<TroubleRow[]> {
      return sql<TroubleRow[]>`
        select error_type as "errorType", split_part(refusal, ':', 1) as refusal, max(status)::int as status,
               count(*)::int as calls,
               (count(*) filter (where retry_count > 0))::int as retried, sum(retry_count)::int as retries
        from calls
        where account_id = ${accountId} and created_at >= ${from} and created_at < ${to} and endpoint = 'messages'
          and (status >= 400 or error_type is not null or retry_count > 0)
          and (${memberId}::text is null or member_id = ${memberId})
        group by error_type, split_part(refusal, ':', 1)
        order by calls desc`;
    },

    /** Retries per request group over a range, from the retried calls only (the partial `calls_trouble` index). */
    async groupRetries(accountId: string, from: Date, to: Date, f: TroubleFilter): Promise<GroupRetries[]> {
      return sql<GroupRetries[]>`
        select group_id as "groupId", sum(retry_count)::int as retries,
               coalesce(sum(retry_count) filter (where status >= 400 or error_type is not null), 0)::int as wasted
        from calls
        where account_id = ${accountId} and created_at >= ${from} and created_at < ${to}
          and retry_count > 0 and group_id is not null and endpoint = 'messages'
          and (${f.memberId ?? null}::text is null or member_id = ${f.memberId ?? null})
          and (${f.keyId ?? null}::text is null or key_id = ${f.keyId ?? null})
          and (${f.model ?? null}::text is null or model = ${f.model ?? null})
          and (${f.groupId ?? null}::text is null or group_id = ${f.groupId ?? null})
        group by group_id`;
    },

    /** The members, keys and client of the given groups' calls over a range (through the `calls_group` index). */
    async groupCallers(
      accountId: string,
      groupIds: string[],
      from: Date,
      to: Date,
      memberId: string | null,
    ): Promise<GroupCallers[]> {
      if (groupIds.length === 0) return [];
      return sql<GroupCallers[]>`
        select group_id as "groupId",
               coalesce(array_agg(distinct member_id) filter (where member_id is not null), '{}') as "memberIds",
               coalesce(array_agg(distinct key_id) filter (where key_id is not null), '{}') as "keyIds",
               coalesce(bool_or(client = 'claude_code'), false) as "claudeCode"
        from calls
        where account_id = ${accountId} and group_id = any(${groupIds}::text[])
          and created_at >= ${from} and created_at < ${to}
          and (${memberId}::text is null or member_id = ${memberId})
        group by group_id`;
    },
  };
}

export type DashboardQueries = ReturnType<typeof dashboardQueries>;
