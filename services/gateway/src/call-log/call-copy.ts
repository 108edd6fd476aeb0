import type { ProviderUsage } from '@keygate/protocol';
import type { CallRecord } from '../lib/call-record';
import { usageFigures, type UsageFigures } from '../usage/usage';

/**
 * A call record as one line of COPY's text format (PostgreSQL docs, "COPY", File Formats → Text
 * Format, https://www.postgresql.org/docs/current/sql-copy.html, read 2026-11-25): the call log
 * insert sends these lines, and the spool keeps the same lines, so a record is serialized once.
 * Fields are tab-separated; `\N` is null; a backslash, tab, newline or carriage return inside a
 * value is written as its backslash escape, so a line never holds a raw newline.
 */

/** The call log's columns, in the order `callValues` gives them. */
export const CALL_COLUMNS = [
  'id',
  'account_id',
  'key_id',
  'member_id',
  'app',
  'environment',
  'group_id',
  'client',
  'endpoint',
  'model',
  'stream',
  'status',
  'error_type',
  'input_tokens',
  'output_tokens',
  'cache_creation_input_tokens',
  'cache_creation_5m_tokens',
  'cache_creation_1h_tokens',
  'cache_read_input_tokens',
  'web_search_requests',
  'service_tier',
  'speed',
  'inference_geo',
  'batch',
  'usage',
  'upstream_message_id',
  'upstream_request_id',
  'retry_count',
  'latency_ms',
  'ttfb_ms',
  'partial',
  'estimated',
  'created_at',
  'agent_id',
  'parent_agent_id',
  'request_bytes',
  'response_bytes',
  'refusal',
  'upstream',
] as const;

type CallValue = string | number | boolean | Date | object | null | undefined;

export function callValues(r: CallRecord): CallValue[] {
  const u = usageFigures(r.usage, r.batch);
  return [
    r.id,
    r.accountId,
    r.keyId,
    r.memberId,
    r.app,
    r.environment,
    r.groupId,
    r.client,
    r.endpoint,
    r.model,
    r.stream,
    r.status,
    r.errorType,
    u.inputTokens,
    u.outputTokens,
    u.cacheCreationInputTokens,
    u.cacheCreation5mTokens,
    u.cacheCreation1hTokens,
    u.cacheReadInputTokens,
    u.webSearchRequests,
    u.serviceTier,
    u.speed,
    u.inferenceGeo,
    u.batch,
    r.usage,
    r.upstreamMessageId,
    r.upstreamRequestId,
    r.retryCount,
    r.latencyMs,
    r.ttfbMs,
    r.partial,
    r.estimated,
    r.createdAt,
    r.agentId,
    r.parentAgentId,
    r.requestBytes,
    r.responseBytes,
    r.refusal ?? null,
    r.upstream ?? null,
  ];
}

const COPY_SPECIAL = /[\\\t\n\r]/g;
const HAS_COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

// One field of each kind. copyLine names each column's kind: a generic field writer, switching on
// `typeof` over an array of mixed values, was the gateway's largest own frame in the profile
// (bench/RESULTS.md, fourth round).
const text = (v: string | null | undefined): string =>
  v == null ? '\\N' : HAS_COPY_SPECIAL.test(v) ? v.replace(COPY_SPECIAL, (c) => COPY_ESCAPES[c]!) : v;
// As the JSON path stored them: a value JSON cannot carry is null.
const num = (v: number | null | undefined): string => (v != null && Number.isFinite(v) ? `${v}` : '\\N');
const bool = (v: boolean | null | undefined): string => (v == null ? '\\N' : v ? 't' : 'f');
const json = (v: object | null | undefined): string => (v == null ? '\\N' : text(JSON.stringify(v)));

/** A record as one line, without its newline: the fields in CALL_COLUMNS' order. */
export function copyLine(r: CallRecord, u: UsageFigures = usageFigures(r.usage, r.batch)): string {
  return (
    `${text(r.id)}\t${text(r.accountId)}\t${text(r.keyId)}\t${text(r.memberId)}\t${text(r.app)}` +
    `\t${text(r.environment)}\t${text(r.groupId)}\t${text(r.client)}\t${text(r.endpoint)}` +
    `\t${text(r.model)}\t${bool(r.stream)}\t${num(r.status)}\t${text(r.errorType)}` +
    `\t${num(u.inputTokens)}\t${num(u.outputTokens)}\t${num(u.cacheCreationInputTokens)}` +
    `\t${num(u.cacheCreation5mTokens)}\t${num(u.cacheCreation1hTokens)}\t${num(u.cacheReadInputTokens)}` +
    `\t${num(u.webSearchRequests)}\t${text(u.serviceTier)}\t${text(u.speed)}\t${text(u.inferenceGeo)}` +
    `\t${bool(u.batch)}\t${json(r.usage)}\t${text(r.upstreamMessageId)}\t${text(r.upstreamRequestId)}` +
    `\t${num(r.retryCount)}\t${num(r.latencyMs)}\t${num(r.ttfbMs)}\t${bool(r.partial)}` +
    `\t${bool(r.estimated)}\t${r.createdAt.toISOString()}\t${text(r.agentId)}\t${text(r.parentAgentId)}` +
    `\t${num(r.requestBytes)}\t${num(r.responseBytes)}\t${text(r.refusal)}\t${text(r.upstream)}`
  );
}

/** A line's call id (its first field: ids are the gateway's own and never escaped). */
export function idOfLine(line: string): string {
  const tab = line.indexOf('\t');
  return tab < 0 ? line : line.slice(0, tab);
}

const UNESCAPE = /\\(.)/g;
const UNESCAPED: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\' };

function field(raw: string): string | null {
  if (raw === '\\N') return null;
  return raw.includes('\\') ? raw.replace(UNESCAPE, (_, c: string) => UNESCAPED[c] ?? c) : raw;
}

type Column = (typeof CALL_COLUMNS)[number];
const COLUMN_INDEX = Object.fromEntries(CALL_COLUMNS.map((c, i) => [c, i])) as Record<Column, number>;

/** A line back into the record it was made from (the spool's replay); null when it is not one. */
export function recordOfCopyLine(line: string): CallRecord | null {
  const raw = line.split('\t');
  // A line a version before `upstream` spooled has one field fewer; before `refusal`, two.
  if (raw.length === CALL_COLUMNS.length - 2) raw.push('\\N');
  if (raw.length === CALL_COLUMNS.length - 1) raw.push('\\N');
  if (raw.length !== CALL_COLUMNS.length) return null;
  const f = raw.map(field);
  const at = (column: Column) => f[COLUMN_INDEX[column]] ?? null;
  const num = (column: Column) => {
    const v = at(column);
    return v === null ? null : Number(v);
  };
  const id = at('id');
  const accountId = at('account_id');
  const endpoint = at('endpoint');
  const createdAt = new Date(at('created_at') ?? Number.NaN);
  if (!id || !accountId || !endpoint || Number.isNaN(createdAt.getTime())) return null;
  const usage = at('usage');
  return {
    id,
    accountId,
    keyId: at('key_id'),
    memberId: at('member_id'),
    app: at('app'),
    environment: at('environment'),
    groupId: at('group_id'),
    client: at('client'),
    endpoint,
    model: at('model'),
    stream: at('stream') === 't',
    status: num('status') ?? 0,
    errorType: at('error_type'),
    usage: usage === null ? null : (JSON.parse(usage) as ProviderUsage),
    upstreamMessageId: at('upstream_message_id'),
    upstreamRequestId: at('upstream_request_id'),
    retryCount: num('retry_count') ?? 0,
    latencyMs: num('latency_ms') ?? 0,
    ttfbMs: num('ttfb_ms'),
    partial: at('partial') === 't',
    estimated: at('estimated') === 't',
    batch: at('batch') === 't',
    createdAt,
    agentId: at('agent_id'),
    parentAgentId: at('parent_agent_id'),
    requestBytes: num('request_bytes'),
    responseBytes: num('response_bytes'),
    refusal: at('refusal'),
    upstream: at('upstream'),
  };
}
