import type { UsageRow } from '../call-log/usage-queries';
import { inTransaction, type Sql } from '../store/database';
import { invalidate } from '../store/invalidations';
import { keyset, type Page, type PageQuery } from '../store/pagination';
import { writeAudit, type AuditEntry } from '../tenancy/audit-queries';
import { insertAlertEvent, type NewAlertEvent } from './alert-queries';

export type BudgetScope = 'account' | 'user' | 'api_key';
export type BudgetPeriod = 'daily' | 'weekly' | 'monthly';

export interface BudgetRecord {
  id: string;
  accountId: string;
  scope: BudgetScope;
  /** The member (`user`) or key (`api_key`) the budget counts; null for the account. */
  targetId: string | null;
  name: string;
  limitCents: number;
  hardCap: boolean;
  /** Percents of the limit, ascending. */
  thresholds: number[];
  period: BudgetPeriod;
  /**
   * What a call holds on it while running (hard caps only): what it is expected to cost (the
   * default), or its ceiling (every input byte a token at the dearest rate, and all of max_tokens).
   */
  hold?: 'expected' | 'ceiling';
  createdBy: string | null;
  createdAt: Date;
}

export type NewBudget = Omit<BudgetRecord, 'createdAt'>;
export type BudgetPatch = Partial<
  Pick<BudgetRecord, 'name' | 'limitCents' | 'hardCap' | 'hold' | 'thresholds' | 'period'>
>;

export interface BudgetFilter {
  scope?: BudgetScope | null;
  targetId?: string | null;
}

/** Usage by model, under the rollups' column names: what a spend is priced from. */
export type SpendRow = Pick<
  UsageRow,
  | 'model'
  | 'input_tokens'
  | 'output_tokens'
  | 'cache_creation_5m_tokens'
  | 'cache_creation_1h_tokens'
  | 'cache_read_input_tokens'
  | 'web_search_requests'
  | 'price_day'
  | 'speed'
  | 'service_tier'
  | 'inference_geo'
  | 'batch'
  | 'prompt_band'
>;

const cols = (sql: Sql) => sql`
  t.id, t.account_id as "accountId", t.scope, t.target_id as "targetId", t.name, t.limit_cents::float8 as "limitCents",
  t.hard_cap as "hardCap", t.hold, t.thresholds, t.period, t.created_by as "createdBy", t.created_at as "createdAt"`;

/** Every instance re-reads an account's budgets on this signal (within a second). */
const changed = (accountId: string) => `budgets:${accountId}` as const;

export function budgetQueries(sql: Sql) {
  async function audited<T>(
    accountId: string,
    work: (t: Sql) => Promise<T | undefined>,
    audit: AuditEntry,
  ): Promise<T | null> {
    return inTransaction(sql, async (t) => {
      const row = await work(t);
      if (row === undefined) return null;
      await writeAudit(t, accountId, audit);
      await invalidate(t, changed(accountId));
      return row;
    });
  }

  return {
    async create(b: NewBudget, audit: AuditEntry): Promise<BudgetRecord> {
      const row = await audited(
        b.accountId,
        async (t) => {
          const [r] = await t<BudgetRecord[]>`
          insert into budgets as t (id, account_id, scope, target_id, name, limit_cents, hard_cap, hold, thresholds, period, created_by)
          values (${b.id}, ${b.accountId}, ${b.scope}, ${b.targetId}, ${b.name}, ${b.limitCents}, ${b.hardCap}, ${b.hold ?? 'expected'},
                  ${b.thresholds}::int[], ${b.period}, ${b.createdBy})
          returning ${cols(t)}`;
          return r;
        },
        audit,
      );
      return row!;
    },

    async get(accountId: string, id: string): Promise<BudgetRecord | null> {
      const [row] = await sql<
        BudgetRecord[]
      >`select ${cols(sql)} from budgets t where t.account_id = ${accountId} and t.id = ${id}`;
      return row ?? null;
    },

    async list(accountId: string, f: BudgetFilter, q: PageQuery): Promise<Page<BudgetRecord>> {
      const ks = keyset(sql, 'budgets', accountId, q);
      const rows = await sql<BudgetRecord[]>`
        select ${cols(sql)} from budgets t
        where t.account_id = ${accountId}
          and (${f.scope ?? null}::text is null or t.scope = ${f.scope ?? null})
          and (${f.targetId ?? null}::text is null or t.target_id = ${f.targetId ?? null})
          ${ks.where}
        ${ks.order} limit ${ks.limit}`;
      return ks.finish(rows);
    },

    /** All of an account's budgets: what admission holds in memory. */
    async ofAccount(accountId: string): Promise<BudgetRecord[]> {
      return sql<
        BudgetRecord[]
      >`select ${cols(sql)} from budgets t where t.account_id = ${accountId} order by t.created_at, t.id`;
    },

    async update(
      accountId: string,
      id: string,
      p: BudgetPatch,
      audit: AuditEntry,
    ): Promise<BudgetRecord | null> {
      return audited(
        accountId,
        async (t) => {
          const [r] = await t<BudgetRecord[]>`
          update budgets t set
            name = coalesce(${p.name ?? null}, t.name),
            limit_cents = coalesce(${p.limitCents ?? null}::bigint, t.limit_cents),
            hard_cap = coalesce(${p.hardCap ?? null}::boolean, t.hard_cap),
            hold = coalesce(${p.hold ?? null}, t.hold),
            thresholds = coalesce(${p.thresholds ?? null}::int[], t.thresholds),
            period = coalesce(${p.period ?? null}, t.period)
          where t.account_id = ${accountId} and t.id = ${id}
          returning ${cols(t)}`;
          return r;
        },
        audit,
      );
    },

    async remove(accountId: string, id: string, audit: AuditEntry): Promise<BudgetRecord | null> {
      return audited(
        accountId,
        async (t) => {
          const [r] = await t<
            BudgetRecord[]
          >`delete from budgets t where t.account_id = ${accountId} and t.id = ${id} returning ${cols(t)}`;
          return r;
        },
        audit,
      );
    },

    /** Usage of messages calls by model in [from, to) from the hourly rollups, for one scope. */
    async spendByModel(
      accountId: string,
      scope: BudgetScope,
      targetId: string | null,
      from: Date,
      to: Date,
    ): Promise<SpendRow[]> {
      const where =
        scope === 'api_key'
          ? sql`u.key_id = ${targetId}`
          : scope === 'user'
            ? sql`u.member_id = ${targetId}`
            : sql`u.account_id = ${accountId}`;
      return sql<SpendRow[]>`
        select u.model, sum(u.input_tokens)::float8 as input_tokens, sum(u.output_tokens)::float8 as output_tokens,
               sum(u.cache_creation_5m_tokens)::float8 as cache_creation_5m_tokens,
               sum(u.cache_creation_1h_tokens)::float8 as cache_creation_1h_tokens,
               sum(u.cache_read_input_tokens)::float8 as cache_read_input_tokens,
               sum(u.web_search_requests)::float8 as web_search_requests,
               date_trunc('day', u.hour, 'UTC') as price_day, u.speed, u.service_tier, u.inference_geo, u.batch, u.prompt_band
        from usage_hourly u
        where ${where} and u.account_id = ${accountId} and u.endpoint in ('messages', 'messages.batch', 'sessions.usage') and u.hour >= ${from} and u.hour < ${to}
          -- Test keys' calls cost nothing and count toward no budget or spend limit.
          and not exists (select 1 from api_keys k where k.id = u.key_id and k.kind = 'test')
        group by u.model, 8, 9, 10, 11, 12, 13`;
    },

    /** When each threshold of these budgets was crossed in the periods starting at `periodStart`. */
    async crossings(
      ids: string[],
      periodStarts: Date[],
    ): Promise<{ budgetId: string; periodStart: Date; threshold: number; crossedAt: Date }[]> {
      if (ids.length === 0) return [];
      return sql`
        select c.budget_id as "budgetId", c.period_start as "periodStart", c.threshold, c.crossed_at as "crossedAt"
        from budget_crossings c join unnest(${ids}::text[], ${periodStarts.map((d) => d.toISOString())}::timestamptz[]) as p(id, start)
          on c.budget_id = p.id and c.period_start = p.start
        order by c.threshold`;
    },

    /**
     * Records that a threshold was crossed this period and queues its alert, once: the
     * instance whose insert wins queues the event; the others return false.
     */
    async recordCrossing(
      budgetId: string,
      periodStart: Date,
      threshold: number,
      event: NewAlertEvent,
    ): Promise<boolean> {
      return inTransaction(sql, async (t) => {
        const won = await t`
          insert into budget_crossings (budget_id, period_start, threshold) values (${budgetId}, ${periodStart}, ${threshold})
          on conflict do nothing returning 1`;
        if (won.length === 0) return false;
        await insertAlertEvent(t, event);
        return true;
      });
    },
  };
}
