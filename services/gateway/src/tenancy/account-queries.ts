import type { KeyRecord, NewKey } from './key-queries';
import { writeAudit, type AuditEntry } from './audit-queries';
import { inTransaction, type Sql } from '../store/database';
import { auditedChange } from './change';
import { insertKey } from './key-queries';
import { countActive, insertMember, PlanTooSmallError, type NewMember } from './member-queries';
import { keyset, type Page, type PageQuery } from '../store/pagination';

export type AccountStatus = 'active' | 'suspended';

export interface AccountRecord {
  id: string;
  name: string;
  planId: string;
  status: AccountStatus;
  providerKeySealed: string | null;
  providerKeyHint: string | null;
  /** 'failing' once the provider refused the key; a new key or a successful call clears it. */
  providerKeyStatus: ProviderKeyStatus;
  providerKeyFailedAt: Date | null;
  trialEndsAt: Date | null;
  createdAt: Date;
  /** The IANA zone report day buckets start in. */
  timeZone: string;
  /** Members may create and revoke their own keys from the dashboard. */
  membersManageOwnKeys: boolean;
}

export type ProviderKeyStatus = 'ok' | 'failing';

export interface MemberRecord {
  id: string;
  accountId: string;
  email: string;
  name: string;
  role: 'admin' | 'developer';
  status: 'active' | 'removed';
  createdAt: Date;
  removedAt: Date | null;
}

export interface PlanRecord {
  id: string;
  name: string;
  priceCents: number;
  currency: string;
  perSeat: boolean;
  maxSeats: number | null;
  trialDays: number;
}

export interface AccountFilter {
  search?: string | null;
  status?: AccountStatus | null;
}

/** What the provider itself shows of a key (first 16 characters, last 4): kept per change of key. */
export interface ProviderKeyPrint {
  head: string;
  tail: string;
}

export type NewAccountRow = Pick<
  AccountRecord,
  'id' | 'name' | 'planId' | 'providerKeySealed' | 'providerKeyHint' | 'trialEndsAt'
> & { providerKeyPrint?: ProviderKeyPrint | null };

export interface AccountPatch {
  name?: string;
  planId?: string;
  status?: AccountStatus;
  provider?: { sealed: string; hint: string; print?: ProviderKeyPrint };
  timeZone?: string;
  membersManageOwnKeys?: boolean;
}

const accountCols = (sql: Sql) => sql`
  t.id, t.name, t.plan_id as "planId", t.status, t.provider_key_sealed as "providerKeySealed",
  t.provider_key_hint as "providerKeyHint", t.provider_key_status as "providerKeyStatus",
  t.provider_key_failed_at as "providerKeyFailedAt", t.trial_ends_at as "trialEndsAt", t.created_at as "createdAt",
  t.time_zone as "timeZone", t.members_manage_own_keys as "membersManageOwnKeys"`;

const planCols = (sql: Sql) => sql`
  id, name, price_cents as "priceCents", currency, per_seat as "perSeat", max_seats as "maxSeats", trial_days as "trialDays"`;

export function accountQueries(sql: Sql) {
  return {
    async plan(id: string): Promise<PlanRecord | null> {
      const [row] = await sql<PlanRecord[]>`select ${planCols(sql)} from plans where id = ${id}`;
      return row ?? null;
    },

    async plans(): Promise<PlanRecord[]> {
      return sql<PlanRecord[]>`select ${planCols(sql)} from plans order by price_cents, id`;
    },

    /** Creates an account, and optionally its first admin member and admin key, in one transaction. */
    async create(
      a: NewAccountRow,
      first: { member: NewMember; key: NewKey; hash: Buffer } | null,
      audit: AuditEntry[],
    ): Promise<{ account: AccountRecord; member: MemberRecord | null; key: KeyRecord | null }> {
      return inTransaction(sql, async (t) => {
        const [account] = await t<AccountRecord[]>`
          insert into accounts as t (id, name, plan_id, provider_key_sealed, provider_key_hint, trial_ends_at)
          values (${a.id}, ${a.name}, ${a.planId}, ${a.providerKeySealed}, ${a.providerKeyHint}, ${a.trialEndsAt})
          returning ${accountCols(t)}`;
        if (a.providerKeyPrint)
          await t`insert into provider_key_history (account_id, key_head, key_tail)
            values (${a.id}, ${a.providerKeyPrint.head}, ${a.providerKeyPrint.tail})`;
        const member = first ? await insertMember(t, first.member) : null;
        const key = first ? await insertKey(t, first.key, first.hash) : null;
        for (const entry of audit) await writeAudit(t, a.id, entry);
        return { account: account!, member, key };
      });
    },

    async get(id: string): Promise<AccountRecord | null> {
      const [row] = await sql<AccountRecord[]>`select ${accountCols(sql)} from accounts t where t.id = ${id}`;
      return row ?? null;
    },

    async names(ids: string[]): Promise<Map<string, string>> {
      if (ids.length === 0) return new Map();
      const rows = await sql<
        { id: string; name: string }[]
      >`select id, name from accounts where id = any(${ids}::text[])`;
      return new Map(rows.map((r) => [r.id, r.name]));
    },

    async list(f: AccountFilter, q: PageQuery): Promise<Page<AccountRecord>> {
      const like = f.search ? `%${f.search.replace(/[\\%_]/g, '\\$&')}%` : null;
      const k = keyset(sql, 'accounts', null, q);
      const rows = await sql<AccountRecord[]>`
        select ${accountCols(sql)} from accounts t
        where (${like}::text is null or t.name ilike ${like} or t.id = ${f.search ?? null})
          and (${f.status ?? null}::text is null or t.status = ${f.status ?? null})
          ${k.where}
        ${k.order} limit ${k.limit}`;
      return k.finish(rows);
    },

    /**
     * Records the provider's verdict on the key `sealed` (a key replaced meanwhile keeps its
     * own status); true when the status changed. No invalidation: the proxy tracks it itself.
     */
    async setProviderKeyStatus(id: string, sealed: string, status: ProviderKeyStatus): Promise<boolean> {
      const rows = await sql`
        update accounts set provider_key_status = ${status}, provider_key_failed_at = ${status === 'failing' ? sql`now()` : null}
        where id = ${id} and provider_key_sealed = ${sealed} and provider_key_status <> ${status}
        returning id`;
      return rows.length > 0;
    },

    /** Changes an account; every instance drops its cached keys (status and provider key live there). */
    async update(
      id: string,
      patch: AccountPatch,
      audit: (before: AccountRecord) => AuditEntry[],
    ): Promise<AccountRecord | null> {
      let before: AccountRecord | undefined;
      return auditedChange(
        sql,
        id,
        `account:${id}`,
        async (t) => {
          [before] = await t<
            AccountRecord[]
          >`select ${accountCols(t)} from accounts t where t.id = ${id} for update`;
          if (!before) return undefined;
          if (patch.planId && patch.planId !== before.planId) {
            // Checked under the account lock that member adds also take, so a downgrade and an add can't both pass.
            const [plan] = await t<
              { name: string; maxSeats: number | null }[]
            >`select name, max_seats as "maxSeats" from plans where id = ${patch.planId}`;
            const seats = await countActive(t, id);
            if (plan?.maxSeats != null && seats > plan.maxSeats)
              throw new PlanTooSmallError(plan.name, plan.maxSeats, seats);
          }
          const status = patch.status ?? before.status;
          const [row] = await t<AccountRecord[]>`
          update accounts t set
            name = ${patch.name ?? before.name},
            plan_id = ${patch.planId ?? before.planId},
            status = ${status},
            suspended_at = ${status === 'suspended' ? (before.status === 'suspended' ? t`t.suspended_at` : t`now()`) : null},
            provider_key_sealed = ${patch.provider?.sealed ?? before.providerKeySealed},
            provider_key_hint = ${patch.provider?.hint ?? before.providerKeyHint},
            provider_key_status = ${patch.provider ? 'ok' : before.providerKeyStatus},
            provider_key_failed_at = ${patch.provider ? null : before.providerKeyFailedAt},
            time_zone = ${patch.timeZone ?? before.timeZone},
            members_manage_own_keys = ${patch.membersManageOwnKeys ?? before.membersManageOwnKeys}
          where t.id = ${id}
          returning ${accountCols(t)}`;
          if (patch.provider?.print)
            await t`insert into provider_key_history (account_id, key_head, key_tail)
              values (${id}, ${patch.provider.print.head}, ${patch.provider.print.tail})`;
          return row;
        },
        () => audit(before!),
      );
    },
  };
}
