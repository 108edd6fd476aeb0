import type { MemberRecord } from './account-queries';
import { writeAudit, type AuditEntry } from './audit-queries';
import { inTransaction, type Sql } from '../store/database';
import { auditedChange } from './change';
import { keyset, type Page, type PageQuery } from '../store/pagination';

export type MemberRole = MemberRecord['role'];

export const memberCols = (sql: Sql) => sql`
  t.id, t.account_id as "accountId", t.email, t.name, t.role, t.status, t.created_at as "createdAt", t.removed_at as "removedAt"`;

export interface MemberFilter {
  status?: 'active' | 'removed' | 'all';
  email?: string | null;
}

/** Span of a seat, for billing: when it was added and (if so) removed. */
export interface SeatSpan {
  createdAt: Date;
  removedAt: Date | null;
}

export class DuplicateMemberError extends Error {}
/** The change would leave the account without an active admin. */
export class LastAdminError extends Error {}
/** Every seat of the account's plan is taken. */
export class SeatLimitError extends Error {
  constructor(
    readonly planName: string,
    readonly maxSeats: number,
  ) {
    super(`the ${planName} plan's ${maxSeats} seat(s) are taken`);
  }
}

export async function countActive(
  t: Sql,
  accountId: string,
  role: MemberRole | null = null,
): Promise<number> {
  const [row] = await t<{ n: number }[]>`
    select count(*)::int as n from members
    where account_id = ${accountId} and status = 'active' and (${role}::text is null or role = ${role})`;
  return row!.n;
}

/** A plan change that would leave more active members than the new plan has seats. */
export class PlanTooSmallError extends Error {
  constructor(
    readonly planName: string,
    readonly maxSeats: number,
    readonly seats: number,
  ) {
    super(`the ${planName} plan has ${maxSeats} seat(s) and the account has ${seats} members`);
  }
}

/** Locks the account row, so that adds to one account take turns, then throws if the plan has no seat left. */
export async function guardSeats(t: Sql, accountId: string): Promise<void> {
  // Lock first, then read the plan: a join locked in one statement would keep the plan row it
  // first saw if a concurrent plan change commits while this waits for the lock.
  const [account] = await t<
    { planId: string }[]
  >`select plan_id as "planId" from accounts where id = ${accountId} for update`;
  if (!account) return;
  const [plan] = await t<{ name: string; maxSeats: number | null }[]>`
    select name, max_seats as "maxSeats" from plans where id = ${account.planId}`;
  if (plan?.maxSeats != null && (await countActive(t, accountId)) >= plan.maxSeats)
    throw new SeatLimitError(plan.name, plan.maxSeats);
}

/** Locks the account's admins; throws when `id` is the only one and would stop being one. */
export async function guardLastAdmin(t: Sql, accountId: string, id: string): Promise<void> {
  const admins = await t<{ id: string }[]>`
    select id from members where account_id = ${accountId} and status = 'active' and role = 'admin' for update`;
  if (admins.length === 1 && admins[0]!.id === id) throw new LastAdminError(id);
}

export type NewMember = Pick<MemberRecord, 'id' | 'accountId' | 'email' | 'name' | 'role'>;

/** Inserts a member; part of a caller's transaction. An active member's email is unique per account. */
export async function insertMember(t: Sql, m: NewMember): Promise<MemberRecord> {
  try {
    const [row] = await t<MemberRecord[]>`
      insert into members as t (id, account_id, email, name, role)
      values (${m.id}, ${m.accountId}, ${m.email}, ${m.name}, ${m.role})
      returning ${memberCols(t)}`;
    return row!;
  } catch (err) {
    if ((err as { code?: string }).code === '23505') throw new DuplicateMemberError(m.email);
    throw err;
  }
}

export function memberQueries(sql: Sql) {
  return {
    /** Adds a seat, within the plan's seat limit. */
    async create(m: NewMember, audit?: AuditEntry): Promise<MemberRecord> {
      return inTransaction(sql, async (t) => {
        await guardSeats(t, m.accountId);
        const row = await insertMember(t, m);
        if (audit) await writeAudit(t, m.accountId, audit);
        return row;
      });
    },

    async get(accountId: string, id: string): Promise<MemberRecord | null> {
      const [row] = await sql<
        MemberRecord[]
      >`select ${memberCols(sql)} from members t where t.account_id = ${accountId} and t.id = ${id}`;
      return row ?? null;
    },

    async list(accountId: string, f: MemberFilter, q: PageQuery): Promise<Page<MemberRecord>> {
      const status = f.status === 'all' ? null : (f.status ?? 'active');
      const k = keyset(sql, 'members', accountId, q);
      const rows = await sql<MemberRecord[]>`
        select ${memberCols(sql)} from members t
        where t.account_id = ${accountId}
          and (${status}::text is null or t.status = ${status})
          and (${f.email ?? null}::text is null or lower(t.email) = lower(${f.email ?? null}))
          ${k.where}
        ${k.order} limit ${k.limit}`;
      return k.finish(rows);
    },

    /** Emails of members (removed ones included), to label report rows. */
    async emails(accountId: string | null, ids: string[]): Promise<Map<string, string>> {
      if (ids.length === 0) return new Map();
      const rows = await sql<{ id: string; email: string }[]>`
        select id, email from members where id = any(${ids}::text[]) and (${accountId}::text is null or account_id = ${accountId})`;
      return new Map(rows.map((r) => [r.id, r.email]));
    },

    async countActive(accountId: string, role?: MemberRole): Promise<number> {
      return countActive(sql, accountId, role);
    },

    async seatSpans(accountId: string, from: Date, to: Date): Promise<SeatSpan[]> {
      return sql<SeatSpan[]>`
        select created_at as "createdAt", removed_at as "removedAt" from members
        where account_id = ${accountId} and created_at < ${to} and (removed_at is null or removed_at >= ${from})`;
    },

    /** Renames or changes a role; the member's keys are re-read everywhere (an admin key needs an admin). */
    async update(
      accountId: string,
      id: string,
      patch: { name?: string; role?: MemberRole },
      audit: AuditEntry,
    ): Promise<MemberRecord | null> {
      return auditedChange(
        sql,
        accountId,
        `member:${id}`,
        async (t) => {
          if (patch.role === 'developer') await guardLastAdmin(t, accountId, id);
          const [row] = await t<MemberRecord[]>`
          update members t set name = coalesce(${patch.name ?? null}, t.name), role = coalesce(${patch.role ?? null}, t.role)
          where t.account_id = ${accountId} and t.id = ${id} and t.status = 'active'
          returning ${memberCols(t)}`;
          return row;
        },
        () => [audit],
      );
    },

    /** Removes a seat: its keys stop working at once, its past usage stays attributed to it. */
    async remove(accountId: string, id: string, audit: AuditEntry): Promise<MemberRecord | null> {
      return auditedChange(
        sql,
        accountId,
        `member:${id}`,
        async (t) => {
          await guardLastAdmin(t, accountId, id);
          const [row] = await t<MemberRecord[]>`
          update members t set status = 'removed', removed_at = now(), removed_by = 'admin'
          where t.account_id = ${accountId} and t.id = ${id} and t.status = 'active'
          returning ${memberCols(t)}`;
          return row;
        },
        () => [audit],
      );
    },
  };
}
