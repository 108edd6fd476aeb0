import type { KeyKind } from '../auth/keys';
import type { AccountRecord } from './accounts';
import type { Sql } from './database';

export type KeyStatus = 'active' | 'inactive' | 'archived';

export interface KeyRecord {
  id: string;
  accountId: string;
  memberId: string | null;
  kind: KeyKind;
  name: string;
  app: string | null;
  environment: string | null;
  hint: string;
  status: KeyStatus;
  expiresAt: Date | null;
  limitRpm: number | null;
  limitTpm: number | null;
  limitMonthlySpendCents: number | null;
  createdBy: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** Everything the hot path needs about a presented secret, from one indexed lookup. */
export interface ResolvedKey {
  key: KeyRecord;
  account: AccountRecord;
  memberStatus: 'active' | 'removed' | null;
  secretExpiresAt: Date | null;
}

export type NewKey = Pick<KeyRecord, 'id' | 'accountId' | 'memberId' | 'kind' | 'name' | 'app' | 'environment' | 'hint'> &
  Partial<Pick<KeyRecord, 'expiresAt' | 'limitRpm' | 'limitTpm' | 'limitMonthlySpendCents' | 'createdBy'>>;

export const keyCols = (sql: Sql, t = 'k') => sql`
  ${sql(t)}.id, ${sql(t)}.account_id as "accountId", ${sql(t)}.member_id as "memberId", ${sql(t)}.kind, ${sql(t)}.name,
  ${sql(t)}.app, ${sql(t)}.environment, ${sql(t)}.hint, ${sql(t)}.status, ${sql(t)}.expires_at as "expiresAt",
  ${sql(t)}.limit_rpm as "limitRpm", ${sql(t)}.limit_tpm as "limitTpm",
  ${sql(t)}.limit_monthly_spend_cents as "limitMonthlySpendCents", ${sql(t)}.created_by as "createdBy",
  ${sql(t)}.created_at as "createdAt", ${sql(t)}.last_used_at as "lastUsedAt"`;

export function keyQueries(sql: Sql) {
  return {
    async create(k: NewKey, hash: Buffer): Promise<KeyRecord> {
      return sql.begin(async (tx) => {
        const [row] = await tx<KeyRecord[]>`
          insert into api_keys (id, account_id, member_id, kind, name, app, environment, hint, expires_at,
                                limit_rpm, limit_tpm, limit_monthly_spend_cents, created_by)
          values (${k.id}, ${k.accountId}, ${k.memberId}, ${k.kind}, ${k.name}, ${k.app}, ${k.environment}, ${k.hint},
                  ${k.expiresAt ?? null}, ${k.limitRpm ?? null}, ${k.limitTpm ?? null}, ${k.limitMonthlySpendCents ?? null},
                  ${k.createdBy ?? null})
          returning ${keyCols(tx as unknown as Sql, 'api_keys')}`;
        await tx`insert into key_secrets (hash, key_id) values (${hash}, ${k.id})`;
        return row!;
      });
    },

    async resolve(hash: Buffer): Promise<ResolvedKey | null> {
      const [row] = await sql`
        select ${keyCols(sql)}, s.expires_at as "secretExpiresAt", m.status as "memberStatus",
               a.id as "a_id", a.name as "a_name", a.plan_id as "a_planId", a.status as "a_status",
               a.provider_key_sealed as "a_providerKeySealed", a.provider_key_hint as "a_providerKeyHint",
               a.trial_ends_at as "a_trialEndsAt", a.created_at as "a_createdAt"
        from key_secrets s
        join api_keys k on k.id = s.key_id
        join accounts a on a.id = k.account_id
        left join members m on m.id = k.member_id
        where s.hash = ${hash}`;
      if (!row) return null;
      const account = {} as Record<string, unknown>;
      const key = {} as Record<string, unknown>;
      for (const [col, value] of Object.entries(row)) {
        if (col.startsWith('a_')) account[col.slice(2)] = value;
        else if (col !== 'secretExpiresAt' && col !== 'memberStatus') key[col] = value;
      }
      return {
        key: key as unknown as KeyRecord,
        account: account as unknown as AccountRecord,
        memberStatus: row.memberStatus ?? null,
        secretExpiresAt: row.secretExpiresAt ?? null,
      };
    },

    async get(accountId: string, id: string): Promise<KeyRecord | null> {
      const [row] = await sql<KeyRecord[]>`select ${keyCols(sql)} from api_keys k where k.account_id = ${accountId} and k.id = ${id}`;
      return row ?? null;
    },

    /** Batched `last_used_at`: one statement for many keys, never a write per request. */
    async touch(lastUsed: Map<string, Date>): Promise<void> {
      if (lastUsed.size === 0) return;
      const ids = [...lastUsed.keys()];
      const times = ids.map((id) => lastUsed.get(id)!.toISOString());
      await sql`
        update api_keys k set last_used_at = greatest(k.last_used_at, v.t)
        from (select unnest(${ids}::text[]) as id, unnest(${times}::timestamptz[]) as t) v
        where k.id = v.id`;
    },
  };
}
