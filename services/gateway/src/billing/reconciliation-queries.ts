import { newId } from '../lib/ids';
import type { Sql } from '../store/database';

export interface ReconciliationRecord {
  id: string;
  accountId: string;
  startingAt: Date;
  endingAt: Date;
  ranAt: Date;
  driftPercent: number;
  result: Record<string, unknown>;
}

export function reconciliationQueries(sql: Sql) {
  return {
    async setAdminKey(accountId: string, sealed: string | null, hint: string | null): Promise<boolean> {
      const rows = await sql`
        update accounts set provider_admin_key_sealed = ${sealed}, provider_admin_key_hint = ${hint}
        where id = ${accountId} returning id`;
      return rows.length > 0;
    },
    async adminKey(accountId: string): Promise<{ sealed: string; hint: string } | null> {
      const [row] = await sql<{ sealed: string | null; hint: string | null }[]>`
        select provider_admin_key_sealed as sealed, provider_admin_key_hint as hint from accounts where id = ${accountId}`;
      return row?.sealed ? { sealed: row.sealed, hint: row.hint ?? '' } : null;
    },
    /** Accounts that gave an Admin API key: the daily job reconciles these. */
    async accountsWithAdminKey(): Promise<string[]> {
      const rows = await sql<{ id: string }[]>`
        select id from accounts where provider_admin_key_sealed is not null and status = 'active' order by id`;
      return rows.map((r) => r.id);
    },
    /**
     * Claims the daily run of (account, UTC day) for one instance: true for the one that got it,
     * false for every other (the primary key decides, so two instances never both run it).
     */
    async claimDay(accountId: string, day: string, instance: string): Promise<boolean> {
      const rows = await sql`
        insert into reconciliation_claims (account_id, day, claimed_by) values (${accountId}, ${day}, ${instance})
        on conflict do nothing returning account_id`;
      return rows.length > 0;
    },
    /** Gives a claim back (the run failed), so a later tick tries the day again. */
    async releaseDay(accountId: string, day: string, instance: string): Promise<void> {
      await sql`delete from reconciliation_claims
        where account_id = ${accountId} and day = ${day} and claimed_by = ${instance}`;
    },
    /** The account's provider keys, oldest first, with the time each came into force. */
    async keyHistory(accountId: string): Promise<{ since: Date; head: string; tail: string }[]> {
      return sql<{ since: Date; head: string; tail: string }[]>`
        select since, key_head as head, key_tail as tail from provider_key_history
        where account_id = ${accountId} order by since, id`;
    },
    async insert(r: Omit<ReconciliationRecord, 'id' | 'ranAt'>): Promise<ReconciliationRecord> {
      const [row] = await sql<ReconciliationRecord[]>`
        insert into reconciliations (id, account_id, starting_at, ending_at, drift_percent, result)
        values (${newId('rec')}, ${r.accountId}, ${r.startingAt}, ${r.endingAt}, ${r.driftPercent}, ${sql.json(r.result as never)})
        returning id, account_id as "accountId", starting_at as "startingAt", ending_at as "endingAt",
                  ran_at as "ranAt", drift_percent as "driftPercent", result`;
      return row!;
    },
    async latest(accountId: string): Promise<ReconciliationRecord | null> {
      const [row] = await sql<ReconciliationRecord[]>`
        select id, account_id as "accountId", starting_at as "startingAt", ending_at as "endingAt",
               ran_at as "ranAt", drift_percent as "driftPercent", result
        from reconciliations where account_id = ${accountId} order by ran_at desc limit 1`;
      return row ?? null;
    },
  };
}

export type ReconciliationQueries = ReturnType<typeof reconciliationQueries>;
