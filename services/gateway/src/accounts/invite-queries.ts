import { writeAudit, type AuditEntry } from '../tenancy/audit-queries';
import { inTransaction, type Sql } from '../store/database';
import { invalidate } from '../store/invalidations';
import { keyset, type Page, type PageQuery } from '../store/pagination';

export interface InviteRecord {
  id: string;
  accountId: string;
  email: string;
  role: string;
  rbacGroupIds: string[];
  /** `expired` is read from `expiresAt`, not stored. */
  status: 'pending' | 'accepted' | 'deleted' | 'expired';
  expiresAt: Date;
  acceptedAt: Date | null;
  memberId: string | null;
  createdAt: Date;
}

export interface ServiceAccountRecord {
  id: string;
  accountId: string;
  name: string;
  description: string | null;
  organizationRole: 'admin' | 'developer';
  createdBy: string | null;
  updatedBy: string | null;
  archivedBy: string | null;
  archivedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const inviteCols = (sql: Sql) => sql`
  t.id, t.account_id as "accountId", t.email, t.role, t.rbac_group_ids as "rbacGroupIds",
  case when t.status = 'pending' and t.expires_at <= now() then 'expired' else t.status end as status,
  t.expires_at as "expiresAt", t.accepted_at as "acceptedAt", t.member_id as "memberId", t.created_at as "createdAt"`;

const saCols = (sql: Sql) => sql`
  t.id, t.account_id as "accountId", t.name, t.description, t.organization_role as "organizationRole",
  t.created_by as "createdBy", t.updated_by as "updatedBy", t.archived_by as "archivedBy", t.archived_at as "archivedAt",
  t.created_at as "createdAt", t.updated_at as "updatedAt"`;

/** A pending invite for that address exists already. */
export class InviteExistsError extends Error {}
/** A service account of that name exists already. */
export class DuplicateNameError extends Error {}

const isUnique = (e: unknown) => (e as { code?: string })?.code === '23505';

export function inviteQueries(sql: Sql) {
  async function audited<T>(accountId: string, audit: AuditEntry, work: (t: Sql) => Promise<T | undefined>) {
    return inTransaction(sql, async (t) => {
      const row = await work(t);
      if (row === undefined) return null;
      await writeAudit(t, accountId, audit);
      return row;
    });
  }

  return {
    async create(
      i: Pick<InviteRecord, 'id' | 'accountId' | 'email' | 'role' | 'rbacGroupIds' | 'expiresAt'>,
      actor: string,
    ): Promise<InviteRecord> {
      const audit = {
        actor,
        action: 'invite.create',
        targetId: i.id,
        details: { email: i.email, role: i.role },
      };
      try {
        const row = await audited(i.accountId, audit, async (t) => {
          // An expired invite no longer holds the address.
          await t`update invites set status = 'deleted' where account_id = ${i.accountId}
                  and lower(email) = lower(${i.email}) and status = 'pending' and expires_at <= now()`;
          const [r] = await t<InviteRecord[]>`
            insert into invites as t (id, account_id, email, role, rbac_group_ids, expires_at, created_by)
            values (${i.id}, ${i.accountId}, ${i.email}, ${i.role}, ${i.rbacGroupIds}, ${i.expiresAt}, ${actor})
            returning ${inviteCols(t)}`;
          return r;
        });
        return row!;
      } catch (e) {
        if (isUnique(e)) throw new InviteExistsError(i.email);
        throw e;
      }
    },

    async get(accountId: string, id: string): Promise<InviteRecord | null> {
      const [row] = await sql<InviteRecord[]>`
        select ${inviteCols(sql)} from invites t where t.account_id = ${accountId} and t.id = ${id} and t.status <> 'deleted'`;
      return row ?? null;
    },

    async list(accountId: string, q: PageQuery): Promise<Page<InviteRecord>> {
      const ks = keyset(sql, 'invites', accountId, q);
      const rows = await sql<InviteRecord[]>`
        select ${inviteCols(sql)} from invites t where t.account_id = ${accountId} and t.status <> 'deleted' ${ks.where}
        ${ks.order} limit ${ks.limit}`;
      return ks.finish(rows);
    },

    async remove(accountId: string, id: string, actor: string): Promise<InviteRecord | null> {
      return audited(accountId, { actor, action: 'invite.delete', targetId: id }, async (t) => {
        const [r] = await t<InviteRecord[]>`
          update invites t set status = 'deleted' where t.account_id = ${accountId} and t.id = ${id}
            and t.status = 'pending' returning ${inviteCols(t)}`;
        return r;
      });
    },

    /**
     * The pending invite for `email`, accepted as member `memberId` (who signed in with that
     * address): the invite's groups become theirs. Part of the caller's transaction.
     */
    async accept(t: Sql, accountId: string, email: string, memberId: string): Promise<InviteRecord | null> {
      const [r] = await t<InviteRecord[]>`
        update invites t set status = 'accepted', accepted_at = now(), member_id = ${memberId}
        where t.account_id = ${accountId} and lower(t.email) = lower(${email}) and t.status = 'pending'
          and t.expires_at > now()
        returning ${inviteCols(t)}`;
      if (!r) return null;
      await t`
        insert into rbac_group_members (group_id, member_id)
        select g.id, ${memberId} from rbac_groups g
        where g.account_id = ${accountId} and g.id = any(${r.rbacGroupIds}) and g.deleted_at is null
        on conflict do nothing`;
      await writeAudit(t, accountId, { actor: memberId, action: 'invite.accept', targetId: r.id });
      await invalidate(t, `account:${accountId}`);
      return r;
    },

    /** `accept` in a transaction of its own. */
    acceptFor(accountId: string, email: string, memberId: string): Promise<InviteRecord | null> {
      return inTransaction(sql, (t) => this.accept(t, accountId, email, memberId));
    },

    async createServiceAccount(
      s: Pick<ServiceAccountRecord, 'id' | 'accountId' | 'name' | 'description' | 'organizationRole'>,
      actor: string,
    ): Promise<ServiceAccountRecord> {
      const audit = { actor, action: 'service_account.create', targetId: s.id, details: { name: s.name } };
      try {
        const row = await audited(s.accountId, audit, async (t) => {
          const [r] = await t<ServiceAccountRecord[]>`
            insert into service_accounts as t (id, account_id, name, description, organization_role, created_by, updated_by)
            values (${s.id}, ${s.accountId}, ${s.name}, ${s.description}, ${s.organizationRole}, ${actor}, ${actor})
            returning ${saCols(t)}`;
          return r;
        });
        return row!;
      } catch (e) {
        if (isUnique(e)) throw new DuplicateNameError(s.name);
        throw e;
      }
    },

    async getServiceAccount(accountId: string, id: string): Promise<ServiceAccountRecord | null> {
      const [row] = await sql<ServiceAccountRecord[]>`
        select ${saCols(sql)} from service_accounts t where t.account_id = ${accountId} and t.id = ${id}`;
      return row ?? null;
    },

    async listServiceAccounts(
      accountId: string,
      includeArchived: boolean,
      q: PageQuery,
    ): Promise<Page<ServiceAccountRecord>> {
      const ks = keyset(sql, 'service_accounts', accountId, q);
      const rows = await sql<ServiceAccountRecord[]>`
        select ${saCols(sql)} from service_accounts t
        where t.account_id = ${accountId} and (${includeArchived} or t.archived_at is null) ${ks.where}
        ${ks.order} limit ${ks.limit}`;
      return ks.finish(rows);
    },

    /** Null: no such service account; 'archived': it is archived and cannot change. */
    async updateServiceAccount(
      accountId: string,
      id: string,
      patch: { description?: string | null; organizationRole?: 'admin' | 'developer' | null },
      actor: string,
    ): Promise<ServiceAccountRecord | 'archived' | null> {
      const audit = { actor, action: 'service_account.update', targetId: id, details: { ...patch } };
      const row = await audited(accountId, audit, async (t) => {
        const [cur] = await t<{ archived: boolean }[]>`
          select archived_at is not null as archived from service_accounts where account_id = ${accountId} and id = ${id} for update`;
        if (!cur) return undefined;
        if (cur.archived) return 'archived' as const;
        const [r] = await t<ServiceAccountRecord[]>`
          update service_accounts t set
            description = ${patch.description === undefined ? sql`t.description` : (patch.description ?? '')},
            organization_role = coalesce(${patch.organizationRole ?? null}, t.organization_role),
            updated_by = ${actor}, updated_at = now()
          where t.id = ${id} returning ${saCols(t)}`;
        return r;
      });
      return row;
    },

    /** Makes the service account the owner of a key just created for it. */
    async attachKey(accountId: string, id: string, keyId: string, actor: string): Promise<void> {
      await audited(
        accountId,
        { actor, action: 'service_account.key_add', targetId: id, details: { key_id: keyId } },
        async (t) => {
          await t`update api_keys set service_account_id = ${id} where account_id = ${accountId} and id = ${keyId}`;
          return true;
        },
      );
    },

    /** Ids of the service account's keys. */
    async keyIds(accountId: string, id: string): Promise<string[]> {
      const rows = await sql<{ id: string }[]>`
        select id from api_keys where account_id = ${accountId} and service_account_id = ${id} and deleted_at is null
        order by created_at, id`;
      return rows.map((r) => r.id);
    },

    /** Archives it (idempotent) and archives its keys: an archived identity calls nothing. */
    async archiveServiceAccount(
      accountId: string,
      id: string,
      actor: string,
    ): Promise<ServiceAccountRecord | null> {
      return audited(accountId, { actor, action: 'service_account.archive', targetId: id }, async (t) => {
        const [r] = await t<ServiceAccountRecord[]>`
          update service_accounts t set archived_at = coalesce(t.archived_at, now()),
            archived_by = coalesce(t.archived_by, ${actor}), updated_at = now()
          where t.account_id = ${accountId} and t.id = ${id} returning ${saCols(t)}`;
        if (!r) return undefined;
        await t`update api_keys set status = 'archived' where service_account_id = ${id} and deleted_at is null`;
        await invalidate(t, `account:${accountId}`);
        return r;
      });
    },
  };
}
