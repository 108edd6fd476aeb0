import type { CallRecord } from '../call-log/record';
import { usageFigures } from '../usage/usage';
import type { Sql } from './database';

/** What a rollup row adds up, under its column names. */
export interface RollupSums {
  /** Every call, whatever its outcome. */
  requests: number;
  /**
   * The calls among `requests` that ended in an error: refused by the gateway, answered with
   * an error upstream, or broken after a 200 (stream error, cut, client gone). Never more than `requests`.
   */
  errors: number;
  input_tokens: number;
  output_tokens: number;
  cache_creation_5m_tokens: number;
  cache_creation_1h_tokens: number;
  cache_read_input_tokens: number;
  web_search_requests: number;
}

interface Rollup extends RollupSums {
  account_id: string;
  hour: Date;
  endpoint: string;
  key_id: string | null;
  member_id: string | null;
  model: string | null;
  group_id: string | null;
}

const HOUR = 3_600_000;

/** A call that ended in an error: an error status, or a 200 whose stream then failed. */
export const isError = (r: Pick<CallRecord, 'status' | 'errorType'>) => r.status >= 400 || !!r.errorType;

/** Sums a batch per (account, endpoint, hour, key, member, model, group) before it meets the database. */
export function rollUp(records: CallRecord[]): Rollup[] {
  const byKey = new Map<string, Rollup>();
  for (const r of records) {
    const hour = new Date(Math.floor(r.createdAt.getTime() / HOUR) * HOUR);
    const id = JSON.stringify([
      r.accountId,
      r.endpoint,
      hour.getTime(),
      r.keyId,
      r.memberId,
      r.model,
      r.groupId,
    ]);
    let row = byKey.get(id);
    if (!row) {
      row = {
        account_id: r.accountId,
        endpoint: r.endpoint,
        hour,
        key_id: r.keyId,
        member_id: r.memberId,
        model: r.model,
        group_id: r.groupId,
        requests: 0,
        errors: 0,
        input_tokens: 0,
        output_tokens: 0,
        cache_creation_5m_tokens: 0,
        cache_creation_1h_tokens: 0,
        cache_read_input_tokens: 0,
        web_search_requests: 0,
      };
      byKey.set(id, row);
    }
    const u = usageFigures(r.usage);
    row.requests += 1;
    if (isError(r)) row.errors += 1;
    row.input_tokens += u.inputTokens;
    row.output_tokens += u.outputTokens;
    row.cache_creation_5m_tokens += u.cacheCreation5mTokens;
    row.cache_creation_1h_tokens += u.cacheCreation1hTokens;
    row.cache_read_input_tokens += u.cacheReadInputTokens;
    row.web_search_requests += u.webSearchRequests;
  }
  return [...byKey.values()];
}

function callRow(r: CallRecord) {
  const u = usageFigures(r.usage);
  return {
    id: r.id,
    account_id: r.accountId,
    key_id: r.keyId,
    member_id: r.memberId,
    app: r.app,
    environment: r.environment,
    group_id: r.groupId,
    client: r.client,
    endpoint: r.endpoint,
    model: r.model,
    stream: r.stream,
    status: r.status,
    error_type: r.errorType,
    input_tokens: u.inputTokens,
    output_tokens: u.outputTokens,
    cache_creation_input_tokens: u.cacheCreationInputTokens,
    cache_creation_5m_tokens: u.cacheCreation5mTokens,
    cache_creation_1h_tokens: u.cacheCreation1hTokens,
    cache_read_input_tokens: u.cacheReadInputTokens,
    web_search_requests: u.webSearchRequests,
    service_tier: u.serviceTier,
    usage: r.usage as never,
    upstream_message_id: r.upstreamMessageId,
    upstream_request_id: r.upstreamRequestId,
    retry_count: r.retryCount,
    latency_ms: r.latencyMs,
    ttfb_ms: r.ttfbMs,
    partial: r.partial,
    estimated: r.estimated,
    created_at: r.createdAt,
    agent_id: r.agentId ?? null,
    parent_agent_id: r.parentAgentId ?? null,
    request_bytes: r.requestBytes ?? null,
    response_bytes: r.responseBytes ?? null,
  };
}

/** How rows for the hourly rollups join those already there: the writer's upsert, also the benchmark's. */
export function addToRollups(sql: Sql) {
  return sql`
    on conflict (account_id, endpoint, hour, key_id, member_id, model, group_id) do update set
      requests = usage_hourly.requests + excluded.requests,
      errors = usage_hourly.errors + excluded.errors,
      input_tokens = usage_hourly.input_tokens + excluded.input_tokens,
      output_tokens = usage_hourly.output_tokens + excluded.output_tokens,
      cache_creation_5m_tokens = usage_hourly.cache_creation_5m_tokens + excluded.cache_creation_5m_tokens,
      cache_creation_1h_tokens = usage_hourly.cache_creation_1h_tokens + excluded.cache_creation_1h_tokens,
      cache_read_input_tokens = usage_hourly.cache_read_input_tokens + excluded.cache_read_input_tokens,
      web_search_requests = usage_hourly.web_search_requests + excluded.web_search_requests`;
}

export function callQueries(sql: Sql) {
  return {
    async ping(): Promise<void> {
      await sql`select 1`;
    },
    /**
     * Inserts a batch and folds it into the hourly rollups, atomically; replays are ignored (a
     * replayed record carries its first created_at, so it meets itself on the partitioned
     * table's key (id, created_at)).
     */
    async insertBatch(records: CallRecord[], opts: { statementTimeoutMs?: number } = {}): Promise<void> {
      if (records.length === 0) return;
      // A call replayed from the spool may meet itself in one batch; count it once.
      if (new Set(records.map((r) => r.id)).size !== records.length)
        records = [...new Map(records.map((r) => [r.id, r])).values()];
      await sql.begin(async (tx) => {
        // For this transaction only: reports and migrations may run longer.
        if (opts.statementTimeoutMs)
          await tx`select set_config('statement_timeout', ${String(opts.statementTimeoutMs)}, true)`;
        // One JSON parameter rather than 28 per row: a single prepared statement whatever the
        // batch size, and half the CPU per record, client and server together (64 → 31 µs measured).
        const rows = records.map(callRow);
        const columns = Object.keys(rows[0]!);
        const inserted = await tx<{ id: string }[]>`
          insert into calls (${tx(columns)})
          select ${tx(columns)} from json_populate_recordset(null::calls, ${JSON.stringify(rows)}::text::json)
          on conflict (id, created_at) do nothing returning id`;
        // A batch retried after a lost commit acknowledgement must not count twice.
        const fresh =
          inserted.length === records.length
            ? records
            : records.filter((r) => inserted.some((i) => i.id === r.id));
        const rollups = rollUp(fresh);
        if (rollups.length === 0) return;
        await tx`
          insert into usage_hourly ${tx(rollups)}
          ${addToRollups(sql)}`;
      });
    },
  };
}
