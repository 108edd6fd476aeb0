import { inTransaction, type Sql } from '../store/database';
import { invalidate } from '../store/invalidations';

/** An operator's price row as stored (pricing/catalog/operator-rows.ts gives it meaning). */
export interface PriceRowRecord {
  model: string;
  effectiveFrom: string | null;
  family: string | null;
  displayName: string | null;
  aliases: string[];
  rates: Record<string, unknown>;
  source: string;
  createdBy: string;
  createdAt: Date;
}

export function priceQueries(sql: Sql) {
  return {
    async list(): Promise<PriceRowRecord[]> {
      return sql<PriceRowRecord[]>`
        select model, to_char(effective_from, 'YYYY-MM-DD') as "effectiveFrom", family, display_name as "displayName",
               aliases, rates, source, created_by as "createdBy", created_at as "createdAt"
        from price_rows order by model, effective_from nulls first`;
    },
    /** The models with billed usage since `since` (the Messages API's, one account's or all). */
    async modelsSince(accountId: string | null, since: Date): Promise<string[]> {
      const rows = await sql<{ model: string }[]>`
        select distinct model from usage_hourly
        where endpoint in ('messages', 'messages.batch', 'sessions.usage') and model is not null and hour >= ${since}
          and (input_tokens + output_tokens + cache_read_input_tokens + cache_creation_5m_tokens
               + cache_creation_1h_tokens + web_search_requests) > 0
          ${accountId === null ? sql`` : sql`and account_id = ${accountId}`}
        order by model`;
      return rows.map((r) => r.model);
    },
    /** Adds a row, or replaces the one of the same model and effective date. */
    async upsert(rows: Omit<PriceRowRecord, 'createdAt'>[]): Promise<void> {
      await inTransaction(sql, async (tx) => {
        for (const r of rows)
          await tx`
            insert into price_rows (model, effective_from, family, display_name, aliases, rates, source, created_by)
            values (${r.model}, ${r.effectiveFrom}, ${r.family}, ${r.displayName}, ${r.aliases}, ${tx.json(r.rates as never)}, ${r.source}, ${r.createdBy})
            on conflict (model, effective_from) do update set
              family = excluded.family, display_name = excluded.display_name, aliases = excluded.aliases,
              rates = excluded.rates, source = excluded.source, created_by = excluded.created_by, created_at = now()`;
        // Every instance reloads its catalog (server.ts), as keys and budgets are spread.
        await invalidate(tx, 'prices:changed');
      });
    },
  };
}
