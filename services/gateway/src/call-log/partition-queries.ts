import type { Sql } from '../store/database';

/** One monthly partition of the call log: `calls_pYYYYMM` holds [from, to) in UTC. */
export interface CallPartition {
  name: string;
  from: Date;
  to: Date;
}

const MONTHLY = /^calls_p(\d{4})(\d{2})$/;
export const DEFAULT_PARTITION = 'calls_default';

function monthOf(name: string): CallPartition | null {
  const m = MONTHLY.exec(name);
  if (!m) return null;
  const [year, month] = [Number(m[1]), Number(m[2]) - 1];
  return { name, from: new Date(Date.UTC(year, month, 1)), to: new Date(Date.UTC(year, month + 1, 1)) };
}

/**
 * The call log's partitions (migration 010) and their retention. Partition DDL lives in the
 * database function `keygate_ensure_calls_partition`, which takes its month as a parameter.
 */
export function partitionQueries(sql: Sql) {
  return {
    /** Creates the partition of the month holding `at` (moving rows the default partition caught for it); returns its name. */
    async ensureMonth(at: Date): Promise<string> {
      const [row] = await sql<{ name: string }[]>`select keygate_ensure_calls_partition(${at}) as name`;
      return row!.name;
    },

    /** The monthly partitions, oldest first. */
    async list(): Promise<CallPartition[]> {
      const rows = await sql<{ name: string }[]>`
        select c.relname as name from pg_inherits i
        join pg_class c on c.oid = i.inhrelid
        join pg_class p on p.oid = i.inhparent
        join pg_namespace n on n.oid = p.relnamespace
        where p.relname = 'calls' and n.nspname = current_schema()`;
      return rows.flatMap((r) => monthOf(r.name) ?? []).sort((a, b) => a.from.getTime() - b.from.getTime());
    },

    /** Months (their first instant, UTC) the default partition holds rows for. */
    async strayMonths(): Promise<Date[]> {
      const rows = await sql<{ month: Date }[]>`
        select distinct date_trunc('month', created_at at time zone 'UTC') at time zone 'UTC' as month from calls_default`;
      return rows.map((r) => r.month);
    },

    /** The shortest and longest retention of any plan, in days. */
    async retentionBounds(): Promise<{ minDays: number; maxDays: number }> {
      const [row] = await sql<{ minDays: number; maxDays: number }[]>`
        select min(retention_days)::int as "minDays", max(retention_days)::int as "maxDays" from plans`;
      return row!;
    },

    /** Drops a monthly partition and its rows (the rollups keep their usage). */
    async drop(name: string): Promise<void> {
      if (!MONTHLY.test(name)) throw new Error(`not a monthly call partition: ${name}`);
      await sql`drop table if exists ${sql(name)}`;
    },

    /** Deletes the rows of one partition older than their account's plan retention, as of `now`; returns how many. */
    async deleteExpired(name: string, now: Date): Promise<number> {
      if (!MONTHLY.test(name) && name !== DEFAULT_PARTITION) throw new Error(`not a call partition: ${name}`);
      const rows = await sql`
        delete from ${sql(name)} c using accounts a, plans p
        where a.id = c.account_id and p.id = a.plan_id
          and c.created_at < ${now}::timestamptz - make_interval(days => p.retention_days)`;
      return rows.count;
    },
  };
}
