import type { Sql } from '../store/database';

/** Who sent a batch of telemetry: the credential's member and key, never the payload's claim. */
export interface TelemetrySender {
  accountId: string;
  memberId: string;
  keyId: string;
}

export interface MetricRow {
  day: string;
  sessionId: string;
  metric: string;
  dims: Record<string, string>;
  seriesStart: string;
  cumulative: boolean;
  value: number;
}

export interface EventRow {
  sessionId: string;
  name: string;
  at: Date;
  promptId: string | null;
  requestId: string | null;
  model: string | null;
  costUsd: number | null;
  durationMs: number | null;
  inputTokens: number | null;
  outputTokens: number | null;
  cacheReadTokens: number | null;
  cacheCreationTokens: number | null;
  attrs: Record<string, string | number | boolean>;
}

/** One member's counters of one UTC day, summed over sessions, by metric and breakdown. */
export interface OutcomeRow {
  day: Date;
  member_id: string;
  metric: string;
  dims: Record<string, string>;
  value: number;
  sessions: number;
}

/** Telemetry sessions joined to the call log through the provider request ids of their api_request events. */
export interface JoinRow {
  day: Date;
  member_id: string;
  session_id: string;
  api_requests: number;
  joined: number;
  telemetry_cost_usd: number;
  duration_ms: number;
}

/**
 * Rows per insert statement. PostgreSQL's wire protocol takes at most 65,535 bind parameters per
 * statement (a 16-bit count; postgresql.org/docs/current/protocol-message-formats.html, Bind,
 * read 2026-11-29); an event row has 16 columns, so 1,000 rows stay well under it.
 */
const ROWS_PER_INSERT = 1_000;

function* chunks<T>(rows: T[]): Generator<T[]> {
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) yield rows.slice(i, i + ROWS_PER_INSERT);
}

const keyOf = (r: MetricRow) => JSON.stringify([r.day, r.sessionId, r.metric, r.dims, r.seriesStart]);

export function telemetryQueries(sql: Sql) {
  return {
    /**
     * Adds delta points to their rows and sets cumulative series to their latest total, in one
     * transaction. Points of one batch that share a row are merged first (an upsert may touch a
     * row once per statement).
     */
    async writeMetrics(by: TelemetrySender, rows: MetricRow[]): Promise<void> {
      const merged = new Map<string, MetricRow>();
      for (const r of rows) {
        const k = keyOf(r) + (r.cumulative ? 'c' : 'd');
        const seen = merged.get(k);
        if (seen && !r.cumulative) seen.value += r.value;
        else merged.set(k, { ...r });
      }
      const toRow = (r: MetricRow) => ({
        account_id: by.accountId,
        member_id: by.memberId,
        key_id: by.keyId,
        day: r.day,
        session_id: r.sessionId,
        metric: r.metric,
        dims: sql.json(r.dims),
        series_start: r.cumulative ? r.seriesStart : '',
        value: r.value,
      });
      const all = [...merged.values()];
      const delta = all.filter((r) => !r.cumulative).map(toRow);
      const cumulative = all.filter((r) => r.cumulative).map(toRow);
      if (!delta.length && !cumulative.length) return;
      const conflict = sql`on conflict (account_id, day, member_id, session_id, metric, dims, series_start)`;
      await sql.begin(async (tx) => {
        for (const part of chunks(delta))
          await tx`insert into claude_code_metrics ${tx(part)} ${conflict}
                   do update set value = claude_code_metrics.value + excluded.value, updated_at = now()`;
        for (const part of chunks(cumulative))
          await tx`insert into claude_code_metrics ${tx(part)} ${conflict}
                   do update set value = excluded.value, updated_at = now()`;
      });
    },

    /** All or nothing: one transaction, however many statements the export takes. */
    async writeEvents(by: TelemetrySender, rows: EventRow[]): Promise<void> {
      if (!rows.length) return;
      const toRow = (r: EventRow) => ({
        account_id: by.accountId,
        member_id: by.memberId,
        key_id: by.keyId,
        session_id: r.sessionId,
        name: r.name,
        at: r.at,
        prompt_id: r.promptId,
        request_id: r.requestId,
        model: r.model,
        cost_usd: r.costUsd,
        duration_ms: r.durationMs,
        input_tokens: r.inputTokens,
        output_tokens: r.outputTokens,
        cache_read_tokens: r.cacheReadTokens,
        cache_creation_tokens: r.cacheCreationTokens,
        attrs: sql.json(r.attrs),
      });
      await sql.begin(async (tx) => {
        for (const part of chunks(rows)) await tx`insert into claude_code_events ${tx(part.map(toRow))}`;
      });
    },

    /** Counters per member and UTC day in [from, to), by metric and breakdown, with the day's session count. */
    async outcomes(
      accountId: string,
      from: Date,
      to: Date,
      memberId: string | null = null,
    ): Promise<OutcomeRow[]> {
      return sql<OutcomeRow[]>`
        select day::timestamp at time zone 'UTC' as day, member_id, metric, dims,
               sum(value)::float8 as value, count(distinct session_id)::float8 as sessions
        from claude_code_metrics
        where account_id = ${accountId} and day >= ${from}::date and day < ${to}::date
          ${memberId === null ? sql`` : sql`and member_id = ${memberId}`}
        group by 1, 2, 3, 4
        order by 1, 2, 3`;
    },

    /**
     * Per member, day and session: the api_request events received, how many of them name a
     * request the call log holds (same provider request id, same account and member), and what
     * Claude Code itself estimated they cost.
     */
    async joins(accountId: string, from: Date, to: Date, memberId: string | null = null): Promise<JoinRow[]> {
      return sql<JoinRow[]>`
        select date_trunc('day', e.at, 'UTC') as day, e.member_id, e.session_id,
               count(*)::float8 as api_requests,
               count(*) filter (where exists (
                 select 1 from calls c
                 where c.account_id = e.account_id and c.upstream_request_id = e.request_id
                   and c.member_id = e.member_id
                   and c.created_at >= e.at - interval '1 day' and c.created_at < e.at + interval '1 day'
               ))::float8 as joined,
               coalesce(sum(e.cost_usd), 0)::float8 as telemetry_cost_usd,
               coalesce(sum(e.duration_ms), 0)::float8 as duration_ms
        from claude_code_events e
        where e.account_id = ${accountId} and e.name = 'api_request' and e.at >= ${from} and e.at < ${to}
          ${memberId === null ? sql`` : sql`and e.member_id = ${memberId}`}
        group by 1, 2, 3
        order by 1, 2, 3`;
    },

    /**
     * Events past their account's plan retention, as the call log's rows (the daily counters
     * stay, as the call log's rollups do).
     */
    async deleteExpiredEvents(now: Date): Promise<number> {
      const rows = await sql`
        delete from claude_code_events e using accounts a, plans p
        where a.id = e.account_id and p.id = a.plan_id
          and e.at < ${now}::timestamptz - make_interval(days => p.retention_days)`;
      return rows.count;
    },

    /** The account's relay target (its own OpenTelemetry collector), or null. */
    async relay(accountId: string): Promise<string | null> {
      const [row] = await sql<{ url: string }[]>`select url from otlp_relays where account_id = ${accountId}`;
      return row?.url ?? null;
    },

    async setRelay(accountId: string, url: string | null): Promise<void> {
      if (url === null) await sql`delete from otlp_relays where account_id = ${accountId}`;
      else
        await sql`insert into otlp_relays (account_id, url) values (${accountId}, ${url})
                  on conflict (account_id) do update set url = excluded.url, updated_at = now()`;
    },
  };
}
