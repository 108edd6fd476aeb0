import type { PolicyRule } from '../lib/model-policy';
import type { AccountRecord } from './account-queries';
import { writeAudit, type AuditEntry } from './audit-queries';
import { inTransaction, type Sql } from '../store/database';
import { auditedChange } from './change';
import { keyset, type Page, type PageQuery } from '../store/pagination';

/** `live` and `test` keys call models; `admin` keys manage one account. */
export type KeyKind = 'live' | 'test' | 'admin';

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
  /** Tokens per minute, input and output together, counted as the provider counts them (cache reads are free). */
  limitTpm: number | null;
  /** Input tokens per minute (uncached input and cache writes), the provider's ITPM. */
  limitItpm: number | null;
  /** Output tokens per minute, the provider's OTPM. */
  limitOtpm: number | null;
  limitMonthlySpendCents: number | null;
  /** Its streaming Messages calls keep their events for a resume unless a request says otherwise. */
  resumableStreams: boolean;
  createdBy: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** Everything the hot path needs about a presented secret, from one indexed lookup. */
export interface ResolvedKey {
  key: KeyRecord;
  account: AccountRecord;
  memberStatus: 'active' | 'removed' | null;
  memberRole: 'admin' | 'developer' | null;
  secretExpiresAt: Date | null;
  /** The member's groups: added by an admin, or named after one of their identity-provider groups. */
  groupIds: string[];
  /** The model policies the key is under (account, groups, member, key), in that order. */
  policyRules: PolicyRule[];
}

const RESOLVED_EXTRAS = new Set(['secretExpiresAt', 'memberStatus', 'memberRole', 'groupIds', 'policyRules']);

/** The groups of the key's member `m` (`k` the key), for a lateral join. */
const memberGroups = (sql: Sql) => sql`
  select array_agg(rg.id order by rg.id) as ids from rbac_groups rg
  where rg.account_id = k.account_id and rg.deleted_at is null and k.member_id is not null
    and (rg.idp_group = any(m.idp_groups)
         or exists (select 1 from rbac_group_members gm where gm.group_id = rg.id and gm.member_id = k.member_id))`;

/** The model policies that apply to key `k` of member `m` in groups `g.ids`, for a lateral join. */
const policyRules = (sql: Sql) => sql`
  select json_agg(json_build_object(
           'subject', mp.subject_type, 'subjectId', mp.subject_id,
           'label', case mp.subject_type
                      when 'rbac_group' then (select rg.name from rbac_groups rg where rg.id = mp.subject_id)
                      when 'user' then m.email when 'api_key' then k.name
                      when 'service_account' then (select s.name from service_accounts s where s.id = mp.subject_id)
                      else a.name end,
           'allowedModels', mp.allowed_models, 'maxTokens', mp.max_tokens)
         order by array_position(array['organization', 'rbac_group', 'user', 'service_account', 'api_key'], mp.subject_type), mp.subject_id) as rules
  from model_policies mp
  where mp.account_id = k.account_id
    and (mp.subject_id in (k.account_id, k.id, k.member_id, k.service_account_id) or mp.subject_id = any(g.ids))`;

export type NewKey = Pick<
  KeyRecord,
  'id' | 'accountId' | 'memberId' | 'kind' | 'name' | 'app' | 'environment' | 'hint'
> &
  Partial<
    Pick<
      KeyRecord,
      | 'expiresAt'
      | 'limitRpm'
      | 'limitTpm'
      | 'limitItpm'
      | 'limitOtpm'
      | 'limitMonthlySpendCents'
      | 'resumableStreams'
      | 'createdBy'
    >
  >;

export interface KeyFilter {
  status?: KeyStatus | null;
  kind?: KeyKind | null;
  memberId?: string | null;
  app?: string | null;
  environment?: string | null;
}

export interface KeyPatch {
  name?: string;
  status?: KeyStatus;
  expiresAt?: Date | null;
  limitRpm?: number | null;
  limitTpm?: number | null;
  limitItpm?: number | null;
  limitOtpm?: number | null;
  limitMonthlySpendCents?: number | null;
  resumableStreams?: boolean;
}

export const keyCols = (sql: Sql, t = 'k') => sql`
  ${sql(t)}.id, ${sql(t)}.account_id as "accountId", ${sql(t)}.member_id as "memberId", ${sql(t)}.kind, ${sql(t)}.name,
  ${sql(t)}.app, ${sql(t)}.environment, ${sql(t)}.hint, ${sql(t)}.status, ${sql(t)}.expires_at as "expiresAt",
  ${sql(t)}.limit_rpm as "limitRpm", ${sql(t)}.limit_tpm as "limitTpm",
  ${sql(t)}.limit_itpm as "limitItpm", ${sql(t)}.limit_otpm as "limitOtpm",
  ${sql(t)}.limit_monthly_spend_cents as "limitMonthlySpendCents", ${sql(t)}.resumable_streams as "resumableStreams",
  ${sql(t)}.created_by as "createdBy",
  ${sql(t)}.created_at as "createdAt", ${sql(t)}.last_used_at as "lastUsedAt"`;

/** The limits a key that can call models takes from its account's plan, where its creator said nothing. */
const PLAN_LIMITS = [
  ['limitRpm', 'default_limit_rpm'],
  ['limitTpm', 'default_limit_tpm'],
  ['limitItpm', 'default_limit_itpm'],
  ['limitOtpm', 'default_limit_otpm'],
  ['limitMonthlySpendCents', 'default_monthly_spend_cap_cents'],
] as const;

/**
 * Inserts a key and its first secret; part of a caller's transaction. A limit left undefined (not
 * null, which says "no limit") takes the account plan's default, whoever creates the key: the
 * account API, a service account, a member token, an identity provider's sign-in.
 */
export async function insertKey(t: Sql, k: NewKey, hash: Buffer): Promise<KeyRecord> {
  const limits: Record<(typeof PLAN_LIMITS)[number][0], number | null> = {
    limitRpm: k.limitRpm ?? null,
    limitTpm: k.limitTpm ?? null,
    limitItpm: k.limitItpm ?? null,
    limitOtpm: k.limitOtpm ?? null,
    limitMonthlySpendCents: k.limitMonthlySpendCents ?? null,
  };
  if (k.kind !== 'admin' && PLAN_LIMITS.some(([f]) => k[f] === undefined)) {
    const [plan] = await t<Record<string, number | null>[]>`
      select p.default_limit_rpm, p.default_limit_tpm, p.default_limit_itpm, p.default_limit_otpm,
             p.default_monthly_spend_cap_cents
      from accounts a join plans p on p.id = a.plan_id where a.id = ${k.accountId}`;
    if (plan) for (const [f, col] of PLAN_LIMITS) if (k[f] === undefined) limits[f] = plan[col] ?? null;
  }
  const [row] = await t<KeyRecord[]>`
    insert into api_keys (id, account_id, member_id, kind, name, app, environment, hint, expires_at,
                          limit_rpm, limit_tpm, limit_itpm, limit_otpm, limit_monthly_spend_cents, resumable_streams, created_by)
    values (${k.id}, ${k.accountId}, ${k.memberId}, ${k.kind}, ${k.name}, ${k.app}, ${k.environment}, ${k.hint},
            ${k.expiresAt ?? null}, ${limits.limitRpm}, ${limits.limitTpm}, ${limits.limitItpm}, ${limits.limitOtpm},
            ${limits.limitMonthlySpendCents}, ${k.resumableStreams ?? false}, ${k.createdBy ?? null})
    returning ${keyCols(t, 'api_keys')}`;
  await t`insert into key_secrets (hash, key_id) values (${hash}, ${k.id})`;
  return row!;
}

export function keyQueries(sql: Sql) {
  return {
    async create(k: NewKey, hash: Buffer, audit?: AuditEntry): Promise<KeyRecord> {
      return inTransaction(sql, async (t) => {
        const row = await insertKey(t, k, hash);
        if (audit) await writeAudit(t, k.accountId, audit);
        return row;
      });
    },

    async resolve(hash: Buffer): Promise<ResolvedKey | null> {
      const [row] = await sql`
        select ${keyCols(sql)}, s.expires_at as "secretExpiresAt", m.status as "memberStatus", m.role as "memberRole",
               a.id as "a_id", a.name as "a_name", a.plan_id as "a_planId", a.status as "a_status",
               a.provider_key_sealed as "a_providerKeySealed", a.provider_key_hint as "a_providerKeyHint",
               a.provider_key_status as "a_providerKeyStatus", a.provider_key_failed_at as "a_providerKeyFailedAt",
               a.trial_ends_at as "a_trialEndsAt", a.created_at as "a_createdAt",
               coalesce(g.ids, '{}') as "groupIds", coalesce(p.rules, '[]') as "policyRules"
        from key_secrets s
        join api_keys k on k.id = s.key_id
        join accounts a on a.id = k.account_id
        left join members m on m.id = k.member_id
        left join lateral (${memberGroups(sql)}) g on true
        left join lateral (${policyRules(sql)}) p on true
        where s.hash = ${hash} and k.deleted_at is null`;
      if (!row) return null;
      const account = {} as Record<string, unknown>;
      const key = {} as Record<string, unknown>;
      for (const [col, value] of Object.entries(row)) {
        if (col.startsWith('a_')) account[col.slice(2)] = value;
        else if (!RESOLVED_EXTRAS.has(col)) key[col] = value;
      }
      return {
        key: key as unknown as KeyRecord,
        account: account as unknown as AccountRecord,
        memberStatus: row.memberStatus ?? null,
        memberRole: row.memberRole ?? null,
        secretExpiresAt: row.secretExpiresAt ?? null,
        groupIds: row.groupIds,
        policyRules: row.policyRules,
      };
    },

    async get(accountId: string, id: string): Promise<KeyRecord | null> {
      const [row] = await sql<KeyRecord[]>`
        select ${keyCols(sql)} from api_keys k where k.account_id = ${accountId} and k.id = ${id} and k.deleted_at is null`;
      return row ?? null;
    },

    /** A key by id alone (ids are unique across accounts): the operator's lookup. */
    async find(id: string): Promise<KeyRecord | null> {
      const [row] = await sql<
        KeyRecord[]
      >`select ${keyCols(sql)} from api_keys k where k.id = ${id} and k.deleted_at is null`;
      return row ?? null;
    },

    async list(accountId: string, f: KeyFilter, q: PageQuery): Promise<Page<KeyRecord>> {
      const ks = keyset(sql, 'api_keys', accountId, q);
      const rows = await sql<KeyRecord[]>`
        select ${keyCols(sql, 't')} from api_keys t
        where t.account_id = ${accountId} and t.deleted_at is null
          -- Workload tokens (one per exchange, minutes long) are listed by their rule, not here.
          and t.federation_rule_id is null
          and (${f.status ?? null}::text is null or t.status = ${f.status ?? null})
          and (${f.kind ?? null}::text is null or t.kind = ${f.kind ?? null})
          and (${f.memberId ?? null}::text is null or t.member_id = ${f.memberId ?? null})
          and (${f.app ?? null}::text is null or t.app = ${f.app ?? null})
          and (${f.environment ?? null}::text is null or t.environment = ${f.environment ?? null})
          ${ks.where}
        ${ks.order} limit ${ks.limit}`;
      return ks.finish(rows);
    },

    /** Applies a patch; fields absent from it are kept. Every instance re-reads the key. */
    async update(
      accountId: string,
      id: string,
      patch: KeyPatch,
      audit: (before: KeyRecord) => AuditEntry[],
    ): Promise<KeyRecord | null> {
      const has = (f: keyof KeyPatch) => f in patch;
      let before: KeyRecord | undefined;
      return auditedChange(
        sql,
        accountId,
        `key:${id}`,
        async (t) => {
          [before] = await t<KeyRecord[]>`
          select ${keyCols(t)} from api_keys k where k.account_id = ${accountId} and k.id = ${id} and k.deleted_at is null for update`;
          if (!before) return undefined;
          const [row] = await t<KeyRecord[]>`
          update api_keys k set
            name = ${patch.name ?? before.name},
            status = ${patch.status ?? before.status},
            expires_at = ${has('expiresAt') ? (patch.expiresAt ?? null) : before.expiresAt},
            limit_rpm = ${has('limitRpm') ? (patch.limitRpm ?? null) : before.limitRpm},
            limit_tpm = ${has('limitTpm') ? (patch.limitTpm ?? null) : before.limitTpm},
            limit_itpm = ${has('limitItpm') ? (patch.limitItpm ?? null) : before.limitItpm},
            limit_otpm = ${has('limitOtpm') ? (patch.limitOtpm ?? null) : before.limitOtpm},
            limit_monthly_spend_cents = ${has('limitMonthlySpendCents') ? (patch.limitMonthlySpendCents ?? null) : before.limitMonthlySpendCents},
            resumable_streams = ${patch.resumableStreams ?? before.resumableStreams}
          where k.id = ${id}
          returning ${keyCols(t)}`;
          return row;
        },
        () => audit(before!),
      );
    },

    /**
     * A new secret for the same key id (so usage, budgets and limits carry over). Older secrets
     * keep working until `graceMs` after the rotation stamps them (database clock), then are refused; that
     * moment is returned as `previousExpiresAt`.
     */
    async rotate(
      accountId: string,
      id: string,
      next: { hash: Buffer; hint: string },
      graceMs: number,
      audit: AuditEntry,
    ): Promise<{ key: KeyRecord; previousExpiresAt: Date | null } | null> {
      return auditedChange(
        sql,
        accountId,
        `key:${id}`,
        async (t) => {
          const [key] = await t<KeyRecord[]>`
          update api_keys k set hint = ${next.hint}
          where k.account_id = ${accountId} and k.id = ${id} and k.deleted_at is null
          returning ${keyCols(t)}`;
          if (!key) return undefined;
          // Secrets expired a day ago can only ever produce the "rotated" message; drop them.
          await t`delete from key_secrets where key_id = ${id} and expires_at < now() - interval '1 day'`;
          // The grace period runs from the statement's clock, last: now() is frozen at BEGIN, and
          // the lock wait and round trips before this point were taken out of the grace period.
          const [previous] = await t<{ expiresAt: Date }[]>`
          with g as (select clock_timestamp() + make_interval(secs => ${graceMs / 1000}) as until)
          update key_secrets s set expires_at = g.until from g
          where s.key_id = ${id} and (s.expires_at is null or s.expires_at > g.until)
          returning s.expires_at as "expiresAt"`;
          await t`insert into key_secrets (hash, key_id) values (${next.hash}, ${id})`;
          return { key, previousExpiresAt: previous?.expiresAt ?? null };
        },
        () => [audit],
      );
    },

    /** Deletes a key: its secrets go at once; the row stays so its usage history keeps a name. */
    async remove(accountId: string, id: string, audit: AuditEntry): Promise<KeyRecord | null> {
      return auditedChange(
        sql,
        accountId,
        `key:${id}`,
        async (t) => {
          const [row] = await t<KeyRecord[]>`
          update api_keys k set deleted_at = now(), status = 'archived'
          where k.account_id = ${accountId} and k.id = ${id} and k.deleted_at is null
          returning ${keyCols(t)}`;
          if (row) await t`delete from key_secrets where key_id = ${id}`;
          return row;
        },
        () => [audit],
      );
    },

    /** Names of keys (deleted ones included), to label report rows. */
    async names(accountId: string | null, ids: string[]): Promise<Map<string, string>> {
      if (ids.length === 0) return new Map();
      const rows = await sql<{ id: string; name: string }[]>`
        select id, name from api_keys where id = any(${ids}::text[]) and (${accountId}::text is null or account_id = ${accountId})`;
      return new Map(rows.map((r) => [r.id, r.name]));
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
