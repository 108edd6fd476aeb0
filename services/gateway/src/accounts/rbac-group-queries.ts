import type { PolicySubject } from '../lib/model-policy';
import { writeAudit, type AuditEntry } from '../tenancy/audit-queries';
import { inTransaction, type Sql } from '../store/database';
import { invalidate } from '../store/invalidations';
import { keyset, type Page, type PageQuery } from '../store/pagination';

export interface RbacGroupRecord {
  id: string;
  accountId: string;
  name: string;
  /** Members whose identity-provider groups hold this name belong to the group too. */
  idpGroup: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface GroupMemberRecord {
  groupId: string;
  memberId: string;
  email: string;
  /** When an admin added them; for a member through their identity-provider group, when the group was made. */
  createdAt: Date;
  via: 'admin' | 'idp';
}

export interface ModelPolicyRecord {
  accountId: string;
  subjectType: PolicySubject;
  subjectId: string;
  allowedModels: string[] | null;
  maxTokens: number | null;
  createdAt: Date;
  updatedAt: Date;
}

const cols = (sql: Sql) => sql`
  t.id, t.account_id as "accountId", t.name, t.idp_group as "idpGroup", t.created_at as "createdAt", t.updated_at as "updatedAt"`;

const policyCols = (sql: Sql) => sql`
  t.account_id as "accountId", t.subject_type as "subjectType", t.subject_id as "subjectId",
  t.allowed_models as "allowedModels", t.max_tokens as "maxTokens", t.created_at as "createdAt", t.updated_at as "updatedAt"`;

/**
 * Groups, their members and model policies. Each change drops the account's cached keys on
 * every instance (`account:<id>`): a key carries its member's groups and its policy.
 */
export function rbacGroupQueries(sql: Sql) {
  function changed<T>(accountId: string, audit: AuditEntry, work: (t: Sql) => Promise<T | null>) {
    return inTransaction(sql, async (t) => {
      const out = await work(t);
      if (out === null) return null;
      await writeAudit(t, accountId, audit);
      await invalidate(t, `account:${accountId}`);
      // Spend limits of groups resolve through membership.
      await invalidate(t, `budgets:${accountId}`);
      return out;
    });
  }

  return {
    async create(g: Pick<RbacGroupRecord, 'id' | 'accountId' | 'name' | 'idpGroup'>, actor: string) {
      const row = await changed(
        g.accountId,
        {
          actor,
          action: 'rbac_group.create',
          targetId: g.id,
          details: { name: g.name, idp_group: g.idpGroup },
        },
        async (t) => {
          const [r] = await t<RbacGroupRecord[]>`
            insert into rbac_groups as t (id, account_id, name, idp_group)
            values (${g.id}, ${g.accountId}, ${g.name}, ${g.idpGroup}) returning ${cols(t)}`;
          return r!;
        },
      );
      return row!;
    },

    async get(accountId: string, id: string): Promise<RbacGroupRecord | null> {
      const [row] = await sql<RbacGroupRecord[]>`
        select ${cols(sql)} from rbac_groups t where t.account_id = ${accountId} and t.id = ${id} and t.deleted_at is null`;
      return row ?? null;
    },

    async list(accountId: string, q: PageQuery): Promise<Page<RbacGroupRecord>> {
      const ks = keyset(sql, 'rbac_groups', accountId, q);
      const rows = await sql<RbacGroupRecord[]>`
        select ${cols(sql)} from rbac_groups t where t.account_id = ${accountId} and t.deleted_at is null ${ks.where}
        ${ks.order} limit ${ks.limit}`;
      return ks.finish(rows);
    },

    update(accountId: string, id: string, patch: { name?: string; idpGroup?: string | null }, actor: string) {
      return changed(
        accountId,
        { actor, action: 'rbac_group.update', targetId: id, details: { ...patch } },
        async (t) => {
          const [r] = await t<RbacGroupRecord[]>`
            update rbac_groups t set
              name = coalesce(${patch.name ?? null}, t.name),
              idp_group = ${patch.idpGroup === undefined ? sql`t.idp_group` : patch.idpGroup},
              updated_at = now()
            where t.account_id = ${accountId} and t.id = ${id} and t.deleted_at is null returning ${cols(t)}`;
          return r ?? null;
        },
      );
    },

    remove(accountId: string, id: string, actor: string) {
      return changed(accountId, { actor, action: 'rbac_group.delete', targetId: id }, async (t) => {
        const [r] = await t<RbacGroupRecord[]>`
          update rbac_groups t set deleted_at = now() where t.account_id = ${accountId} and t.id = ${id}
            and t.deleted_at is null returning ${cols(t)}`;
        if (!r) return null;
        await t`delete from rbac_group_members where group_id = ${id}`;
        await t`delete from model_policies where account_id = ${accountId} and subject_id = ${id}`;
        await t`delete from spend_limits where account_id = ${accountId} and scope_id = ${id}`;
        return r;
      });
    },

    /** Active members of the group: added by an admin, or through their identity-provider groups. */
    async members(accountId: string, groupId: string, q: PageQuery): Promise<Page<GroupMemberRecord>> {
      const after = q.afterId ?? null;
      const rows = await sql<GroupMemberRecord[]>`
        select g.id as "groupId", m.id as "memberId", m.email,
               coalesce(gm.created_at, g.created_at) as "createdAt",
               case when gm.member_id is null then 'idp' else 'admin' end as via
        from rbac_groups g
        join members m on m.account_id = g.account_id and m.status = 'active'
        left join rbac_group_members gm on gm.group_id = g.id and gm.member_id = m.id
        where g.account_id = ${accountId} and g.id = ${groupId} and g.deleted_at is null
          and (gm.member_id is not null or g.idp_group = any(m.idp_groups))
          and (${after}::text is null or m.id > ${after})
        order by m.id limit ${q.limit + 1}`;
      return { rows: rows.slice(0, q.limit), hasMore: rows.length > q.limit };
    },

    /** Adds a member; null when the group or the member is not the account's. */
    addMember(accountId: string, groupId: string, memberId: string, actor: string) {
      const audit = {
        actor,
        action: 'rbac_group.member_add',
        targetId: groupId,
        details: { user_id: memberId },
      };
      return changed(accountId, audit, async (t) => {
        const [r] = await t<{ createdAt: Date; email: string }[]>`
          insert into rbac_group_members (group_id, member_id)
          select g.id, m.id from rbac_groups g join members m on m.account_id = g.account_id
          where g.account_id = ${accountId} and g.id = ${groupId} and g.deleted_at is null
            and m.id = ${memberId} and m.status = 'active'
          on conflict (group_id, member_id) do update set group_id = excluded.group_id
          returning created_at as "createdAt", (select email from members where id = ${memberId}) as email`;
        return r ?? null;
      });
    },

    removeMember(accountId: string, groupId: string, memberId: string, actor: string) {
      const audit = {
        actor,
        action: 'rbac_group.member_remove',
        targetId: groupId,
        details: { user_id: memberId },
      };
      return changed(accountId, audit, async (t) => {
        const rows = await t`
          delete from rbac_group_members gm using rbac_groups g
          where gm.group_id = g.id and g.account_id = ${accountId} and g.id = ${groupId} and gm.member_id = ${memberId}
          returning gm.member_id`;
        return rows.length > 0 ? true : null;
      });
    },

    /** The account's active members with their groups (sorted ids), by member id. */
    async memberGroups(
      accountId: string,
      memberIds: string[] | null,
    ): Promise<{ memberId: string; email: string; name: string; groupIds: string[] }[]> {
      return sql`
        select m.id as "memberId", m.email, m.name,
               coalesce((select array_agg(rg.id order by rg.id) from rbac_groups rg
                         where rg.account_id = m.account_id and rg.deleted_at is null
                           and (rg.idp_group = any(m.idp_groups)
                                or exists (select 1 from rbac_group_members gm where gm.group_id = rg.id and gm.member_id = m.id))),
                        '{}') as "groupIds"
        from members m
        where m.account_id = ${accountId} and m.status = 'active'
          and (${memberIds}::text[] is null or m.id = any(${memberIds}::text[]))
        order by m.id`;
    },

    async policies(accountId: string): Promise<ModelPolicyRecord[]> {
      return sql<ModelPolicyRecord[]>`
        select ${policyCols(sql)} from model_policies t where t.account_id = ${accountId}
        order by array_position(array['organization', 'rbac_group', 'user', 'service_account', 'api_key'], t.subject_type), t.subject_id`;
    },

    setPolicy(p: Omit<ModelPolicyRecord, 'createdAt' | 'updatedAt'>, actor: string) {
      const audit = {
        actor,
        action: 'model_policy.set',
        targetId: p.subjectId,
        details: { allowed_models: p.allowedModels, max_tokens: p.maxTokens },
      };
      return changed(p.accountId, audit, async (t) => {
        const [r] = await t<ModelPolicyRecord[]>`
          insert into model_policies as t (account_id, subject_type, subject_id, allowed_models, max_tokens)
          values (${p.accountId}, ${p.subjectType}, ${p.subjectId}, ${p.allowedModels}, ${p.maxTokens})
          on conflict (account_id, subject_id) do update
            set allowed_models = excluded.allowed_models, max_tokens = excluded.max_tokens, updated_at = now()
          returning ${policyCols(t)}`;
        return r!;
      });
    },

    removePolicy(accountId: string, subjectId: string, actor: string) {
      const audit = { actor, action: 'model_policy.delete', targetId: subjectId };
      return changed(accountId, audit, async (t) => {
        const [r] = await t<ModelPolicyRecord[]>`
          delete from model_policies t where t.account_id = ${accountId} and t.subject_id = ${subjectId}
          returning ${policyCols(t)}`;
        return r ?? null;
      });
    },
  };
}
