import { newId } from '../lib/ids';
import { writeAudit, type AuditEntry } from '../tenancy/audit-queries';
import { inTransaction, type Sql } from '../store/database';
import { invalidate } from '../store/invalidations';

export type RateLimitScope = 'organization' | 'rbac_group' | 'user';

/** A member's, a group's or the account's rate limits; per minute, null: no limit of that kind. */
export interface ScopeRateLimitRecord {
  id: string;
  accountId: string;
  scopeType: RateLimitScope;
  /** The account's id for `organization`, else the group's or the member's; `*` for the plan's member default. */
  scopeId: string;
  rpm: number | null;
  itpm: number | null;
  otpm: number | null;
  /** `plan`: the plan's default for members without a limit of their own, not a row anyone set. */
  source: 'set' | 'plan';
  createdBy: string | null;
  updatedBy: string | null;
  createdAt: Date | null;
  updatedAt: Date | null;
}

export type RateLimitValues = Pick<ScopeRateLimitRecord, 'rpm' | 'itpm' | 'otpm'>;

const cols = (sql: Sql) => sql`
  t.id, t.account_id as "accountId", t.scope_type as "scopeType", t.scope_id as "scopeId",
  t.limit_rpm as rpm, t.limit_itpm as itpm, t.limit_otpm as otpm, 'set' as source,
  t.created_by as "createdBy", t.updated_by as "updatedBy", t.created_at as "createdAt", t.updated_at as "updatedAt"`;

const ORDER = ['organization', 'rbac_group', 'user'];

/** Every change tells every instance through `budgets:<account>`, which admission's cache of these hears. */
export function rateLimitQueries(sql: Sql) {
  return {
    /**
     * The account's rate limits, set ones in the provider's list order, then the plan's member
     * default (scope id `*`) when the plan has one: what admission holds in memory.
     */
    async ofAccount(accountId: string): Promise<ScopeRateLimitRecord[]> {
      const set = await sql<ScopeRateLimitRecord[]>`
        select ${cols(sql)} from scope_rate_limits t where t.account_id = ${accountId}
        order by array_position(${ORDER}::text[], t.scope_type), t.scope_id`;
      const [plan] = await sql<(RateLimitValues & { planId: string })[]>`
        select p.id as "planId", p.default_member_limit_rpm as rpm, p.default_member_limit_itpm as itpm,
               p.default_member_limit_otpm as otpm
        from accounts a join plans p on p.id = a.plan_id where a.id = ${accountId}`;
      if (!plan || (plan.rpm == null && plan.itpm == null && plan.otpm == null)) return set;
      return [
        ...set,
        {
          id: `rl_plan_${plan.planId}_user`,
          accountId,
          scopeType: 'user',
          scopeId: '*',
          rpm: plan.rpm,
          itpm: plan.itpm,
          otpm: plan.otpm,
          source: 'plan',
          createdBy: null,
          updatedBy: null,
          createdAt: null,
          updatedAt: null,
        },
      ];
    },

    /**
     * Sets the named kinds of a scope's limits (a null value clears that kind; kinds not named
     * keep theirs); a row left with no limit is removed. Null when it was removed so.
     */
    async set(
      accountId: string,
      scope: { type: RateLimitScope; id: string },
      values: Partial<RateLimitValues>,
      actor: string,
    ): Promise<ScopeRateLimitRecord | null> {
      return inTransaction(sql, async (t) => {
        const has = (k: keyof RateLimitValues) => k in values;
        const [row] = await t<ScopeRateLimitRecord[]>`
          insert into scope_rate_limits as t
            (id, account_id, scope_type, scope_id, limit_rpm, limit_itpm, limit_otpm, created_by, updated_by)
          values (${newId('rl')}, ${accountId}, ${scope.type}, ${scope.id}, ${values.rpm ?? null},
                  ${values.itpm ?? null}, ${values.otpm ?? null}, ${actor}, ${actor})
          on conflict (account_id, scope_id) do update set
            limit_rpm = case when ${has('rpm')} then excluded.limit_rpm else t.limit_rpm end,
            limit_itpm = case when ${has('itpm')} then excluded.limit_itpm else t.limit_itpm end,
            limit_otpm = case when ${has('otpm')} then excluded.limit_otpm else t.limit_otpm end,
            updated_by = excluded.updated_by, updated_at = now()
          returning ${cols(t)}`;
        await writeAudit(t, accountId, {
          action: 'rate_limit.set',
          actor,
          targetId: row!.id,
          details: { scope_type: scope.type, scope_id: scope.id, ...values },
        });
        await invalidate(t, `budgets:${accountId}`);
        if (row!.rpm != null || row!.itpm != null || row!.otpm != null) return row!;
        await t`delete from scope_rate_limits where id = ${row!.id}`;
        return null;
      });
    },

    async get(accountId: string, id: string): Promise<ScopeRateLimitRecord | null> {
      const [row] = await sql<ScopeRateLimitRecord[]>`
        select ${cols(sql)} from scope_rate_limits t where t.account_id = ${accountId} and t.id = ${id}`;
      return row ?? null;
    },

    async remove(accountId: string, id: string, audit: AuditEntry): Promise<ScopeRateLimitRecord | null> {
      return inTransaction(sql, async (t) => {
        const [row] = await t<ScopeRateLimitRecord[]>`
          delete from scope_rate_limits t where t.account_id = ${accountId} and t.id = ${id} returning ${cols(t)}`;
        if (!row) return null;
        await writeAudit(t, accountId, audit);
        await invalidate(t, `budgets:${accountId}`);
        return row;
      });
    },
  };
}
