import type { Sql } from '../store/database';

/** One counter a call holds its ceiling on. */
export interface HoldRow {
  scope: string;
  label: string;
  microUsd: number;
  limitMicro: number;
}

/** Shared spend counters and holds for hard caps, when instances share no Redis. */
export function spendQueries(sql: Sql) {
  return {
    async get(scope: string, label: string): Promise<number | null> {
      const [row] = await sql<{ micro: string }[]>`
        select micro_usd as micro from spend_counters where scope = ${scope} and label = ${label}`;
      return row ? Number(row.micro) : null;
    },

    /** Starts a counter at `micro` unless another instance started it first; answers its figure. */
    async seed(scope: string, label: string, micro: number, periodEnd: Date): Promise<number> {
      const [row] = await sql<{ micro: string }[]>`
        with added as (
          insert into spend_counters (scope, label, micro_usd, period_end)
          values (${scope}, ${label}, ${Math.round(micro)}, ${periodEnd})
          on conflict (scope, label) do nothing
          returning micro_usd)
        select micro_usd as micro from added
        union all
        select micro_usd from spend_counters where scope = ${scope} and label = ${label}
        limit 1`;
      return Number(row!.micro);
    },

    async add(scope: string, label: string, micro: number): Promise<number | null> {
      const [row] = await sql<{ micro: string }[]>`
        update spend_counters set micro_usd = micro_usd + ${Math.round(micro)}
        where scope = ${scope} and label = ${label} returning micro_usd as micro`;
      return row ? Number(row.micro) : null;
    },

    /**
     * Holds each row's amount for `holdId` if all fit (spent + unlapsed holds + amount within
     * the limit), all or none: the counters are locked in one order, so concurrent holds on
     * the same counters queue instead of deadlocking. Answers the index refused (-1: held).
     */
    async reserve(
      holdId: string,
      rows: readonly HoldRow[],
      until: Date,
      now: Date,
    ): Promise<{ refused: number; leftMicro: number; unseeded: boolean }> {
      return sql.begin(async (tx) => {
        const scopes = rows.map((r) => r.scope);
        const labels = rows.map((r) => r.label);
        // Lock first; the sums come from a later statement, whose snapshot sees the holds of
        // every transaction this one waited for (READ COMMITTED takes one per statement).
        await tx`
          select 1 from spend_counters c
          join unnest(${scopes}::text[], ${labels}::text[]) as w(scope, label) using (scope, label)
          order by c.scope, c.label
          for update of c`;
        const counters = await tx<{ scope: string; label: string; micro: string; held: string }[]>`
          select c.scope, c.label, c.micro_usd as micro,
                 coalesce((select sum(h.micro_usd) from spend_holds h
                           where h.scope = c.scope and h.label = c.label and h.expires_at > ${now}), 0) as held
          from spend_counters c
          join unnest(${scopes}::text[], ${labels}::text[]) as w(scope, label) using (scope, label)`;
        const byId = new Map(counters.map((c) => [`${c.scope}\u0000${c.label}`, c]));
        for (const [i, r] of rows.entries()) {
          const c = byId.get(`${r.scope}\u0000${r.label}`);
          if (!c) return { refused: i, leftMicro: 0, unseeded: true };
          const left = r.limitMicro - Number(c.micro) - Number(c.held);
          if (r.microUsd > left) return { refused: i, leftMicro: Math.max(0, left), unseeded: false };
        }
        await tx`
          delete from spend_holds where expires_at <= ${now}
            and (scope, label) in (select * from unnest(${scopes}::text[], ${labels}::text[]))`;
        await tx`
          insert into spend_holds (scope, label, hold_id, micro_usd, expires_at)
          select scope, label, ${holdId}, micro, ${until}
          from unnest(${scopes}::text[], ${labels}::text[], ${rows.map((r) => Math.round(r.microUsd))}::bigint[])
            as w(scope, label, micro)
          on conflict (scope, label, hold_id) do update set micro_usd = excluded.micro_usd`;
        return { refused: -1, leftMicro: 0, unseeded: false };
      });
    },

    /** Drops `holdId`'s holds and adds each counter's real cost; answers each counter's figure (null: not tracked). */
    async settle(
      holdId: string,
      rows: readonly { scope: string; label: string; microUsd: number }[],
    ): Promise<(number | null)[]> {
      const scopes = rows.map((r) => r.scope);
      const labels = rows.map((r) => r.label);
      const costs = rows.map((r) => Math.round(r.microUsd));
      const updated = await sql<{ scope: string; label: string; micro: string }[]>`
        with dropped as (
          delete from spend_holds where hold_id = ${holdId}
            and (scope, label) in (select * from unnest(${scopes}::text[], ${labels}::text[])))
        update spend_counters c set micro_usd = c.micro_usd + w.cost
        from unnest(${scopes}::text[], ${labels}::text[], ${costs}::bigint[]) as w(scope, label, cost)
        where c.scope = w.scope and c.label = w.label
        returning c.scope, c.label, c.micro_usd as micro`;
      const byId = new Map(updated.map((u) => [`${u.scope}\u0000${u.label}`, Number(u.micro)]));
      return rows.map((r) => byId.get(`${r.scope}\u0000${r.label}`) ?? null);
    },

    /** Counters of periods that ended a week ago, and lapsed holds. */
    async sweep(now: Date): Promise<void> {
      await sql`delete from spend_holds where expires_at <= ${now}`;
      await sql`delete from spend_counters where period_end < ${now}::timestamptz - interval '7 days'`;
    },
  };
}
