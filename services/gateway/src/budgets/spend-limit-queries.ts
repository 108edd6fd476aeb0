import { newId } from '../lib/ids';
import { writeAudit, type AuditEntry } from '../tenancy/audit-queries';
import { insertAlertEvent } from './alert-queries';
import type { BudgetPeriod } from './budget-queries';
import { inTransaction, type Sql } from '../store/database';
import { invalidate } from '../store/invalidations';
import { keyset, type Page, type PageQuery } from '../store/pagination';

export type SpendLimitScope = 'organization' | 'rbac_group' | 'user';

/** A spend limit: the provider's face of a hard-capped budget, one per scope and period. */
export interface SpendLimitRecord {
  id: string;
  accountId: string;
  scopeType: SpendLimitScope;
  /** The account's id for `organization`, else the group's or the member's. */
  scopeId: string;
  period: BudgetPeriod;
  /** USD cents; null is an explicit no-limit override for this scope and period. */
  amountCents: number | null;
  /** What a running call holds on it: what it is expected to cost (default), or its ceiling. */
  hold?: 'expected' | 'ceiling';
  createdAt: Date;
  updatedAt: Date;
}

export type IncreaseStatus = 'pending' | 'approved' | 'denied';

export interface IncreaseRequestRecord {
  id: string;
  accountId: string;
  memberId: string;
  memberEmail: string;
  memberName: string;
  memberStatus: 'active' | 'removed';
  period: BudgetPeriod;
  requestedCents: number | null;
  reason: string | null;
  status: IncreaseStatus;
  spendLimitId: string | null;
  resolvedBy: string | null;
  resolvedAt: Date | null;
  createdAt: Date;
}

const cols = (sql: Sql) => sql`
  t.id, t.account_id as "accountId", t.scope_type as "scopeType", t.scope_id as "scopeId", t.period,
  t.amount_cents::float8 as "amountCents", t.hold, t.created_at as "createdAt", t.updated_at as "updatedAt"`;

const requestCols = (sql: Sql) => sql`
  t.id, t.account_id as "accountId", t.member_id as "memberId", m.email as "memberEmail", m.name as "memberName",
  m.status as "memberStatus", t.period, t.requested_cents::float8 as "requestedCents", t.reason, t.status,
  t.spend_limit_id as "spendLimitId", t.resolved_by as "resolvedBy", t.resolved_at as "resolvedAt",
  t.created_at as "createdAt"`;

/** The order the provider lists limits in: by scope type, then a fixed order within one. */
const ORDER = ['organization', 'rbac_group', 'user'];

export function spendLimitQueries(sql: Sql) {
  /** Writes the limit for (scope, period), replacing one that exists; tells every instance. */
  async function upsert(
    t: Sql,
    l: Pick<SpendLimitRecord, 'accountId' | 'scopeType' | 'scopeId' | 'period' | 'amountCents' | 'hold'>,
    actor: string,
  ): Promise<SpendLimitRecord> {
    const [row] = await t<SpendLimitRecord[]>`
      insert into spend_limits as t (id, account_id, scope_type, scope_id, period, amount_cents, hold, created_by)
      values (${newId('spl')}, ${l.accountId}, ${l.scopeType}, ${l.scopeId}, ${l.period}, ${l.amountCents},
              ${l.hold ?? 'expected'}, ${actor})
      on conflict (account_id, scope_id, period)
      do update set amount_cents = excluded.amount_cents, hold = excluded.hold, updated_at = now()
      returning ${cols(t)}`;
    await writeAudit(t, l.accountId, {
      action: 'spend_limit.set',
      actor,
      targetId: row!.id,
      details: {
        scope_type: l.scopeType,
        scope_id: l.scopeId,
        period: l.period,
        amount_cents: l.amountCents,
      },
    });
    await invalidate(t, `budgets:${l.accountId}`);
    return row!;
  }

  return {
    set: (l: Parameters<typeof upsert>[1], actor: string) => inTransaction(sql, (t) => upsert(t, l, actor)),

    async get(accountId: string, id: string): Promise<SpendLimitRecord | null> {
      const [row] = await sql<SpendLimitRecord[]>`
        select ${cols(sql)} from spend_limits t where t.account_id = ${accountId} and t.id = ${id}`;
      return row ?? null;
    },

    /** Every limit of the account, in the provider's list order: what admission holds in memory. */
    async ofAccount(accountId: string): Promise<SpendLimitRecord[]> {
      return sql<SpendLimitRecord[]>`
        select ${cols(sql)} from spend_limits t where t.account_id = ${accountId}
        order by array_position(${ORDER}::text[], t.scope_type), t.scope_id, t.period`;
    },

    async remove(accountId: string, id: string, audit: AuditEntry): Promise<SpendLimitRecord | null> {
      return inTransaction(sql, async (t) => {
        const [row] = await t<SpendLimitRecord[]>`
          delete from spend_limits t where t.account_id = ${accountId} and t.id = ${id} returning ${cols(t)}`;
        if (!row) return null;
        await writeAudit(t, accountId, audit);
        await invalidate(t, `budgets:${accountId}`);
        return row;
      });
    },

    async request(
      r: Pick<IncreaseRequestRecord, 'accountId' | 'memberId' | 'period' | 'requestedCents' | 'reason'>,
    ): Promise<IncreaseRequestRecord> {
      return inTransaction(sql, async (t) => {
        const id = newId('slir');
        await t`
          insert into spend_limit_increase_requests (id, account_id, member_id, period, requested_cents, reason)
          values (${id}, ${r.accountId}, ${r.memberId}, ${r.period}, ${r.requestedCents}, ${r.reason})`;
        const [row] = await t<IncreaseRequestRecord[]>`
          select ${requestCols(t)} from spend_limit_increase_requests t join members m on m.id = t.member_id
          where t.id = ${id}`;
        await insertAlertEvent(t, {
          accountId: r.accountId,
          type: 'spend_limit.increase_requested',
          data: increaseEvent(row!),
        });
        return row!;
      });
    },

    async getRequest(accountId: string, id: string): Promise<IncreaseRequestRecord | null> {
      const [row] = await sql<IncreaseRequestRecord[]>`
        select ${requestCols(sql)} from spend_limit_increase_requests t join members m on m.id = t.member_id
        where t.account_id = ${accountId} and t.id = ${id}`;
      return row ?? null;
    },

    /** Most recent first; requests of people no longer members are left out, as the provider does. */
    async listRequests(
      accountId: string,
      f: { status: IncreaseStatus[] | null; memberIds: string[] | null },
      q: PageQuery,
    ): Promise<Page<IncreaseRequestRecord>> {
      const ks = keyset(sql, 'spend_limit_increase_requests', accountId, q);
      const rows = await sql<IncreaseRequestRecord[]>`
        select ${requestCols(sql)} from spend_limit_increase_requests t join members m on m.id = t.member_id
        where t.account_id = ${accountId} and m.status = 'active'
          and (${f.status}::text[] is null or t.status = any(${f.status}::text[]))
          and (${f.memberIds}::text[] is null or t.member_id = any(${f.memberIds}::text[]))
          ${ks.where}
        ${ks.order} limit ${ks.limit}`;
      return ks.finish(rows);
    },

    /**
     * Resolves a pending request: approving writes the member's `user` limit at `amountCents`
     * (every instance hears it through the budgets invalidation), in the same transaction.
     * Null when the request is not pending (already resolved, or not found).
     */
    async resolve(
      accountId: string,
      id: string,
      decision: { status: 'approved'; amountCents: number; period: BudgetPeriod } | { status: 'denied' },
      actor: string,
    ): Promise<{ request: IncreaseRequestRecord; limit: SpendLimitRecord | null } | null> {
      return inTransaction(sql, async (t) => {
        const [pending] = await t<{ memberId: string; period: BudgetPeriod }[]>`
          select member_id as "memberId", period from spend_limit_increase_requests
          where account_id = ${accountId} and id = ${id} and status = 'pending' for update`;
        if (!pending) return null;
        const limit =
          decision.status === 'approved'
            ? await upsert(
                t,
                {
                  accountId,
                  scopeType: 'user',
                  scopeId: pending.memberId,
                  period: decision.period,
                  amountCents: decision.amountCents,
                },
                actor,
              )
            : null;
        await t`
          update spend_limit_increase_requests
          set status = ${decision.status}, resolved_by = ${actor}, resolved_at = now(), spend_limit_id = ${limit?.id ?? null}
          where id = ${id}`;
        const [row] = await t<IncreaseRequestRecord[]>`
          select ${requestCols(t)} from spend_limit_increase_requests t join members m on m.id = t.member_id
          where t.id = ${id}`;
        await insertAlertEvent(t, {
          accountId,
          type: `spend_limit.increase_${decision.status}`,
          data: increaseEvent(row!),
        });
        return { request: row!, limit };
      });
    },
  };
}

function increaseEvent(r: IncreaseRequestRecord): Record<string, unknown> {
  return {
    request_id: r.id,
    user_id: r.memberId,
    email: r.memberEmail,
    period: r.period,
    requested_cents: r.requestedCents,
    status: r.status,
    resolved_by: r.resolvedBy,
  };
}
