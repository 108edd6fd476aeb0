import { finished } from 'node:stream/promises';
import type { TransactionSql } from 'postgres';
import type { CallRecord } from '../lib/call-record';
import { CALL_COLUMNS, callValues, copyLine, recordOfCopyLine } from './call-copy';
import { promptBand } from '../usage/usage';
import { usageFigures, type UsageFigures } from '../usage/usage';
import type { Sql } from '../store/database';
import { keyset, type Page, type PageQuery } from '../store/pagination';

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

export interface Rollup extends RollupSums {
  account_id: string;
  hour: Date;
  endpoint: string;
  key_id: string | null;
  member_id: string | null;
  model: string | null;
  group_id: string | null;
  speed: string | null;
  service_tier: string | null;
  inference_geo: string | null;
  batch: boolean;
  prompt_band: number;
}

const HOUR = 3_600_000;

/** A call that ended in an error: an error status, or a 200 whose stream then failed. */
export const isError = (r: Pick<CallRecord, 'status' | 'errorType'>) => r.status >= 400 || !!r.errorType;

/** One call as its hourly rollup row would count it alone (the hour as epoch ms): what the call log keeps of a call instead of its record while the call waits for its batch. */
export interface RollupShare extends Omit<Rollup, 'hour'> {
  hourMs: number;
}

export function rollupShare(r: CallRecord, u: UsageFigures = usageFigures(r.usage, r.batch)): RollupShare {
  return {
    account_id: r.accountId,
    endpoint: r.endpoint,
    hourMs: Math.floor(r.createdAt.getTime() / HOUR) * HOUR,
    key_id: r.keyId,
    member_id: r.memberId,
    model: r.model,
    group_id: r.groupId,
    speed: u.speed,
    service_tier: u.serviceTier,
    inference_geo: u.inferenceGeo,
    batch: u.batch,
    prompt_band: promptBand(u.inputTokens + u.cacheReadInputTokens + u.cacheCreationInputTokens),
    requests: 1,
    errors: isError(r) ? 1 : 0,
    input_tokens: u.inputTokens,
    output_tokens: u.outputTokens,
    cache_creation_5m_tokens: u.cacheCreation5mTokens,
    cache_creation_1h_tokens: u.cacheCreation1hTokens,
    cache_read_input_tokens: u.cacheReadInputTokens,
    web_search_requests: u.webSearchRequests,
  };
}

/** Sums calls' shares per (account, endpoint, hour, key, member, model, group, …) before they meet the database. */
export function sumShares(shares: readonly RollupShare[]): Rollup[] {
  const byKey = new Map<string, Rollup>();
  for (const c of shares) {
    const id = rollupKey(
      c.account_id,
      c.endpoint,
      c.hourMs,
      c.key_id,
      c.member_id,
      c.model,
      c.group_id,
      c.speed,
      c.service_tier,
      c.inference_geo,
      c.batch,
      c.prompt_band,
    );
    let row = byKey.get(id);
    if (!row) {
      const { hourMs, ...rest } = c;
      row = {
        ...rest,
        hour: new Date(hourMs),
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
    row.requests += c.requests;
    row.errors += c.errors;
    row.input_tokens += c.input_tokens;
    row.output_tokens += c.output_tokens;
    row.cache_creation_5m_tokens += c.cache_creation_5m_tokens;
    row.cache_creation_1h_tokens += c.cache_creation_1h_tokens;
    row.cache_read_input_tokens += c.cache_read_input_tokens;
    row.web_search_requests += c.web_search_requests;
  }
  return [...byKey.values()];
}

/** Sums a batch per (account, endpoint, hour, key, member, model, group) before it meets the database. */
export function rollUp(records: CallRecord[]): Rollup[] {
  return sumShares(records.map((r) => rollupShare(r)));
}

/**
 * The rollup row a call adds to. Fields joined by NUL, a null written as SOH; a value that holds
 * either (the model and the group come from the client) falls back to JSON, so two different
 * rows never share a key. JSON for every call was a microsecond of the gateway's CPU per call.
 */
function rollupKey(...f: Array<string | number | boolean | null>): string {
  let key = '';
  for (const v of f) {
    if (typeof v === 'string' && (v.includes('\0') || v.includes('\u0001'))) return JSON.stringify(f);
    key += v === null ? '\u0001\0' : `${v}\0`;
  }
  return key;
}

/** How rows for the hourly rollups join those already there: the writer's upsert, also the benchmark's. */
export function addToRollups(sql: Sql | TransactionSql) {
  return sql`
    on conflict on constraint usage_hourly_rollup_key do update set
      requests = usage_hourly.requests + excluded.requests,
      errors = usage_hourly.errors + excluded.errors,
      input_tokens = usage_hourly.input_tokens + excluded.input_tokens,
      output_tokens = usage_hourly.output_tokens + excluded.output_tokens,
      cache_creation_5m_tokens = usage_hourly.cache_creation_5m_tokens + excluded.cache_creation_5m_tokens,
      cache_creation_1h_tokens = usage_hourly.cache_creation_1h_tokens + excluded.cache_creation_1h_tokens,
      cache_read_input_tokens = usage_hourly.cache_read_input_tokens + excluded.cache_read_input_tokens,
      web_search_requests = usage_hourly.web_search_requests + excluded.web_search_requests`;
}

export interface CallFilter {
  keyId?: string | null;
  memberId?: string | null;
  groupId?: string | null;
  app?: string | null;
  environment?: string | null;
  model?: string | null;
  /** As logged: `messages`, `count_tokens`, `POST /v1/files`, … */
  endpoint?: string | null;
  /** `ok` (below 400, no error), `error`, or one HTTP status. */
  status?: 'ok' | 'error' | number | null;
  from?: Date | null;
  to?: Date | null;
}

export function callQueries(sql: Sql) {
  return {
    /** The call log, newest first, read through the (account_id, created_at) index. */
    async list(accountId: string, f: CallFilter, q: PageQuery): Promise<Page<CallRecord>> {
      const k = keyset(sql, 'calls', accountId, q);
      const code = typeof f.status === 'number' ? f.status : null;
      const outcome = typeof f.status === 'string' ? f.status : null;
      const rows = await sql<CallRecord[]>`
        select t.id, t.account_id as "accountId", t.key_id as "keyId", t.member_id as "memberId", t.app, t.environment,
               t.group_id as "groupId", t.client, t.endpoint, t.model, t.stream, t.status, t.error_type as "errorType", t.usage,
               t.upstream_message_id as "upstreamMessageId", t.upstream_request_id as "upstreamRequestId",
               t.retry_count as "retryCount", t.latency_ms as "latencyMs", t.ttfb_ms as "ttfbMs", t.partial, t.estimated, t.batch,
               t.refusal, t.upstream, t.created_at as "createdAt",
               exists (select 1 from api_keys k where k.id = t.key_id and k.kind = 'test') as test
        from calls t
        where t.account_id = ${accountId}
          and (${f.keyId ?? null}::text is null or t.key_id = ${f.keyId ?? null})
          and (${f.memberId ?? null}::text is null or t.member_id = ${f.memberId ?? null})
          and (${f.groupId ?? null}::text is null or t.group_id = ${f.groupId ?? null})
          and (${f.app ?? null}::text is null or t.app = ${f.app ?? null})
          and (${f.environment ?? null}::text is null or t.environment = ${f.environment ?? null})
          and (${f.model ?? null}::text is null or t.model = ${f.model ?? null})
          and (${f.endpoint ?? null}::text is null or t.endpoint = ${f.endpoint ?? null})
          and (${code}::int is null or t.status = ${code})
          and (${outcome}::text is null
               or (${outcome} = 'ok' and t.status < 400 and t.error_type is null)
               or (${outcome} = 'error' and (t.status >= 400 or t.error_type is not null)))
          and (${f.from ?? null}::timestamptz is null or t.created_at >= ${f.from ?? null})
          and (${f.to ?? null}::timestamptz is null or t.created_at < ${f.to ?? null})
          ${k.where}
        ${k.order} limit ${k.limit}`;
      return k.finish(rows);
    },
    /** The endpoints an account's calls went to in [from, to), from the hourly rollups (the call log page's filter). */
    async endpoints(accountId: string, from: Date, to: Date): Promise<string[]> {
      const rows = await sql<{ endpoint: string }[]>`
        select distinct endpoint from usage_hourly
        where account_id = ${accountId} and hour >= date_trunc('hour', ${from}::timestamptz) and hour < ${to}
        order by endpoint`;
      return rows.map((r) => r.endpoint);
    },
    async ping(): Promise<void> {
      await sql`select 1`;
    },
    /**
     * Inserts a batch and folds it into the hourly rollups, atomically. COPY first: PostgreSQL
     * spends about a third of the CPU per row that a JSON parameter costs it (8 against 22 µs,
     * bench/RESULTS.md). A batch holding a call already stored (replayed from the spool after a
     * lost commit acknowledgement) fails COPY on the key, and goes again through an insert that
     * skips what is there, so no call counts twice.
     */
    async insertBatch(records: CallRecord[], opts: InsertOptions = {}): Promise<void> {
      // A call replayed from the spool may meet itself in one batch; count it once.
      if (new Set(records.map((r) => r.id)).size !== records.length)
        records = [...new Map(records.map((r) => [r.id, r])).values()];
      await insertLines(
        sql,
        records.map((r) => copyLine(r)),
        rollUp(records),
        opts,
      );
    },
    /**
     * The call log writer's insert: the batch as the COPY lines made when each call ended, and the
     * rollup rows they add up to (`sumShares`), so the writer need not keep the records themselves.
     */
    insertLines: (lines: readonly string[], rollups: Rollup[], opts: InsertOptions = {}) =>
      insertLines(sql, lines, rollups, opts),
  };
}

/**
 * Inserts a batch and folds it into the hourly rollups, atomically. COPY first: PostgreSQL spends
 * about a third of the CPU per row that a JSON parameter costs it (8 against 22 µs,
 * bench/RESULTS.md). A batch holding a call already stored (replayed from the spool after a lost
 * commit acknowledgement) fails COPY on the key, and goes again through an insert that skips what
 * is there, so no call counts twice.
 */
async function insertLines(
  sql: Sql,
  lines: readonly string[],
  rollups: Rollup[],
  opts: InsertOptions,
): Promise<void> {
  if (lines.length === 0) return;
  try {
    await sql.begin(async (tx) => {
      await statementTimeout(tx, opts);
      const copy = await tx`copy calls (${tx(CALL_COLUMNS as unknown as string[])}) from stdin`.writable();
      for (let i = 0; i < lines.length; i += COPY_CHUNK_LINES)
        copy.write(`${lines.slice(i, i + COPY_CHUNK_LINES).join('\n')}\n`);
      copy.end();
      await finished(copy);
      if (rollups.length > 0) await tx`insert into usage_hourly ${tx(rollups)} ${addToRollups(tx)}`;
    });
  } catch (err) {
    if ((err as { code?: string })?.code !== UNIQUE_VIOLATION) throw err;
    const records = lines.map(recordOfCopyLine);
    if (records.some((r) => r === null))
      throw Object.assign(new Error('a call log line does not read back as a record'), { code: '22000' });
    await insertSkippingStored(sql, records as CallRecord[], opts);
  }
}

/**
 * Lines per COPY data message (about 30 KB of the bench's calls). A batch sent as one string went
 * through the driver as two copies of a quarter-megabyte buffer each, allocated outside the heap
 * and faulted in afresh for every batch: the gateway's own CPU for the insert fell from about 16
 * to 9 µs per call with the batch sent in parts (bench/RESULTS.md, fifth round).
 */
const COPY_CHUNK_LINES = 64;

export interface InsertOptions {
  /** The database cancels the insert past it (0 or absent: no bound). */
  statementTimeoutMs?: number;
}

const UNIQUE_VIOLATION = '23505';

async function statementTimeout(tx: TransactionSql, opts: { statementTimeoutMs?: number }): Promise<void> {
  // For this transaction only: reports and migrations may run longer.
  if (opts.statementTimeoutMs)
    await tx`select set_config('statement_timeout', ${String(opts.statementTimeoutMs)}, true)`;
}

async function addRollups(tx: TransactionSql, records: CallRecord[]): Promise<void> {
  const rollups = rollUp(records);
  if (rollups.length === 0) return;
  await tx`
    insert into usage_hourly ${tx(rollups)}
    ${addToRollups(tx)}`;
}

/** The batch again, as one JSON parameter, leaving out the calls already stored. */
async function insertSkippingStored(
  sql: Sql,
  records: CallRecord[],
  opts: { statementTimeoutMs?: number },
): Promise<void> {
  await sql.begin(async (tx) => {
    await statementTimeout(tx, opts);
    const rows = records.map((r) => {
      const values = callValues(r);
      return Object.fromEntries(CALL_COLUMNS.map((c, i) => [c, values[i] ?? null]));
    });
    const columns = CALL_COLUMNS as unknown as string[];
    const inserted = await tx<{ id: string }[]>`
      insert into calls (${tx(columns)})
      select ${tx(columns)} from json_populate_recordset(null::calls, ${JSON.stringify(rows)}::text::json)
      on conflict (id, created_at) do nothing returning id`;
    const fresh = new Set(inserted.map((i) => i.id));
    await addRollups(
      tx,
      records.filter((r) => fresh.has(r.id)),
    );
  });
}
