import type { MemberRecord } from '../tenancy/account-queries';
import { writeAudit, type AuditEntry } from '../tenancy/audit-queries';
import { inTransaction, type Sql } from '../store/database';
import { invalidate } from '../store/invalidations';
import { guardSeats, insertMember, memberCols } from '../tenancy/member-queries';

export interface ScimTokenRecord {
  id: string;
  accountId: string;
  hint: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export interface ScimGroupRecord {
  id: string;
  accountId: string;
  displayName: string;
  externalId: string | null;
  memberIds: string[];
  createdAt: Date;
}

/** A member as SCIM sees it: every member, removed ones as `active: false`, with their groups claim. */
export type ScimMember = MemberRecord & { externalId: string | null; groups: string[] };

const scimMemberCols = (sql: Sql) =>
  sql`${memberCols(sql)}, t.scim_external_id as "externalId", t.idp_groups as groups`;

/** A member an account admin removed stays removed: SCIM may not bring back their seat and keys. */
export class RemovedByAdminError extends Error {}

const groupCols = (sql: Sql) => sql`
  g.id, g.account_id as "accountId", g.display_name as "displayName", g.external_id as "externalId", g.created_at as "createdAt",
  coalesce((select array_agg(gm.member_id order by gm.member_id) from scim_group_members gm where gm.group_id = g.id), '{}') as "memberIds"`;

/** Each member of `memberIds` gets the names of the SCIM groups they are in as their groups claim. */
async function syncGroups(t: Sql, memberIds: string[]): Promise<void> {
  if (memberIds.length === 0) return;
  await t`
    update members m set idp_groups = coalesce((
      select array_agg(g.display_name order by g.display_name)
      from scim_group_members gm join scim_groups g on g.id = gm.group_id where gm.member_id = m.id), '{}')
    where m.id = any(${memberIds}::text[])`;
}

/** SCIM 2.0 (RFC 7643/7644): bearer tokens per account, users (members) and groups. */
export function scimQueries(sql: Sql) {
  return {
    async createToken(t: Omit<ScimTokenRecord, 'createdAt' | 'revokedAt'>, hash: Buffer, audit: AuditEntry) {
      return inTransaction(sql, async (tx) => {
        const [row] = await tx<ScimTokenRecord[]>`
          insert into scim_tokens (id, account_id, hash, hint) values (${t.id}, ${t.accountId}, ${hash}, ${t.hint})
          returning id, account_id as "accountId", hint, created_at as "createdAt", revoked_at as "revokedAt"`;
        await writeAudit(tx, t.accountId, audit);
        return row!;
      });
    },

    async tokens(accountId: string): Promise<ScimTokenRecord[]> {
      return sql<ScimTokenRecord[]>`
        select id, account_id as "accountId", hint, created_at as "createdAt", revoked_at as "revokedAt"
        from scim_tokens where account_id = ${accountId} and revoked_at is null order by created_at`;
    },

    async revokeToken(accountId: string, id: string, audit: AuditEntry): Promise<boolean> {
      return inTransaction(sql, async (tx) => {
        const rows = await tx`
          update scim_tokens set revoked_at = now() where account_id = ${accountId} and id = ${id} and revoked_at is null returning id`;
        if (rows.length) await writeAudit(tx, accountId, audit);
        return rows.length > 0;
      });
    },

    /** The account a live SCIM token belongs to. */
    async accountFor(hash: Buffer): Promise<string | null> {
      const [row] = await sql<{ accountId: string }[]>`
        select t.account_id as "accountId" from scim_tokens t join accounts a on a.id = t.account_id
        where t.hash = ${hash} and t.revoked_at is null and a.status = 'active'`;
      return row?.accountId ?? null;
    },

    async user(accountId: string, id: string): Promise<ScimMember | null> {
      const [row] = await sql<ScimMember[]>`
        select ${scimMemberCols(sql)} from members t where t.account_id = ${accountId} and t.id = ${id}`;
      return row ?? null;
    },

    /** Members in id order, optionally those with one userName (email); removed ones only when asked by name. */
    async users(
      accountId: string,
      userName: string | null,
      offset: number,
      count: number,
    ): Promise<{ total: number; rows: ScimMember[] }> {
      const where = sql`t.account_id = ${accountId}
        and (${userName}::text is null or lower(t.email) = lower(${userName}))
        and (${userName}::text is not null or t.status = 'active')`;
      const [n] = await sql<{ n: number }[]>`select count(*)::int as n from members t where ${where}`;
      const rows = await sql<ScimMember[]>`
        select ${scimMemberCols(sql)} from members t where ${where}
        order by t.status = 'active' desc, t.created_at, t.id offset ${offset} limit ${count}`;
      return { total: n!.n, rows };
    },

    async createUser(
      m: { id: string; accountId: string; email: string; name: string; externalId: string | null },
      audit: AuditEntry,
    ): Promise<ScimMember> {
      return inTransaction(sql, async (t) => {
        await guardSeats(t, m.accountId);
        await insertMember(t, { ...m, role: 'developer' });
        const [row] = await t<ScimMember[]>`
          update members t set scim_external_id = ${m.externalId}, scim_managed = true
          where t.id = ${m.id} returning ${scimMemberCols(t)}`;
        await writeAudit(t, m.accountId, audit);
        return row!;
      });
    },

    /**
     * Renames, changes the email, and turns a member active again (within the seats) after a
     * deactivation by the identity provider; each change of state or email is audited. A member
     * an admin removed is refused (RemovedByAdminError): their keys stay revoked.
     */
    async updateUser(
      accountId: string,
      id: string,
      patch: { name?: string; email?: string; active?: true },
      actor: string,
    ): Promise<ScimMember | null> {
      return inTransaction(sql, async (t) => {
        const [m] = await t<{ status: string; email: string; removedBy: string | null }[]>`
          select status, email, removed_by as "removedBy" from members
          where account_id = ${accountId} and id = ${id} for update`;
        if (!m) return null;
        if (patch.active && m.status === 'removed') {
          if (m.removedBy === 'admin') throw new RemovedByAdminError(id);
          await guardSeats(t, accountId);
          await t`update members set status = 'active', removed_at = null, removed_by = null where id = ${id}`;
          await writeAudit(t, accountId, { actor, action: 'member.reactivated', targetId: id });
        }
        const [row] = await t<ScimMember[]>`
          update members t set name = coalesce(${patch.name ?? null}, t.name), email = coalesce(${patch.email ?? null}, t.email)
          where t.account_id = ${accountId} and t.id = ${id} returning ${scimMemberCols(t)}`;
        if (patch.email && patch.email !== m.email.toLowerCase())
          await writeAudit(t, accountId, {
            actor,
            action: 'member.email_changed',
            targetId: id,
            details: { from: m.email, to: patch.email },
          });
        await invalidate(t, `member:${id}`);
        return row ?? null;
      });
    },

    async group(accountId: string, id: string): Promise<ScimGroupRecord | null> {
      const [row] = await sql<ScimGroupRecord[]>`
        select ${groupCols(sql)} from scim_groups g where g.account_id = ${accountId} and g.id = ${id}`;
      return row ?? null;
    },

    async groups(
      accountId: string,
      displayName: string | null,
      offset: number,
      count: number,
    ): Promise<{ total: number; rows: ScimGroupRecord[] }> {
      const where = sql`g.account_id = ${accountId} and (${displayName}::text is null or lower(g.display_name) = lower(${displayName}))`;
      const [n] = await sql<{ n: number }[]>`select count(*)::int as n from scim_groups g where ${where}`;
      const rows = await sql<ScimGroupRecord[]>`
        select ${groupCols(sql)} from scim_groups g where ${where} order by g.created_at, g.id offset ${offset} limit ${count}`;
      return { total: n!.n, rows };
    },

    /**
     * Creates or changes a group: its name and (when given) its whole member list or members to
     * add and remove. Members outside the account are ignored. The members touched get the
     * names of their groups as their groups claim.
     */
    async saveGroup(
      g: { id: string; accountId: string; displayName?: string; externalId?: string | null },
      members: { set?: string[]; add?: string[]; remove?: string[] },
      create: boolean,
    ): Promise<ScimGroupRecord | null> {
      return inTransaction(sql, async (t) => {
        if (create)
          await t`insert into scim_groups (id, account_id, display_name, external_id)
                  values (${g.id}, ${g.accountId}, ${g.displayName!}, ${g.externalId ?? null})`;
        else {
          const rows = await t`
            update scim_groups set display_name = coalesce(${g.displayName ?? null}, display_name),
              external_id = coalesce(${g.externalId ?? null}, external_id)
            where account_id = ${g.accountId} and id = ${g.id} returning id`;
          if (rows.length === 0) return null;
        }
        const before = await t<
          { m: string }[]
        >`select member_id as m from scim_group_members where group_id = ${g.id}`;
        if (members.set) await t`delete from scim_group_members where group_id = ${g.id}`;
        if (members.remove?.length)
          await t`delete from scim_group_members where group_id = ${g.id} and member_id = any(${members.remove}::text[])`;
        const add = [...(members.set ?? []), ...(members.add ?? [])];
        if (add.length)
          await t`
            insert into scim_group_members (group_id, member_id)
            select ${g.id}, m.id from members m where m.account_id = ${g.accountId} and m.id = any(${add}::text[])
            on conflict do nothing`;
        await syncGroups(t, [...new Set([...before.map((r) => r.m), ...add, ...(members.remove ?? [])])]);
        const [row] = await t<
          ScimGroupRecord[]
        >`select ${groupCols(t)} from scim_groups g where g.id = ${g.id}`;
        return row ?? null;
      });
    },

    async deleteGroup(accountId: string, id: string): Promise<boolean> {
      return inTransaction(sql, async (t) => {
        const members = await t<
          { m: string }[]
        >`select member_id as m from scim_group_members where group_id = ${id}`;
        const rows =
          await t`delete from scim_groups where account_id = ${accountId} and id = ${id} returning id`;
        await syncGroups(
          t,
          members.map((r) => r.m),
        );
        return rows.length > 0;
      });
    },
  };
}

export type ScimQueries = ReturnType<typeof scimQueries>;
