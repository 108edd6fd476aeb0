import { z } from 'zod';
import { parseOr400 } from '../lib/validation';
import type { EventRow } from '../reports/telemetry-queries';

/**
 * What the receiver keeps of Claude Code's OpenTelemetry export. Metric and event names and
 * their attributes are Claude Code's, as documented at
 * https://code.claude.com/docs/en/monitoring-usage (read 2026-11-25) and as Claude Code 2.1.330
 * sends them (seen on loopback the same day): counters are Sums with DELTA temporality unless
 * OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE says cumulative; events are log records
 * whose body is `claude_code.<event>` and whose `event.name` attribute is `<event>`.
 */
export const KEPT_METRICS = new Set([
  'claude_code.session.count',
  'claude_code.lines_of_code.count',
  'claude_code.pull_request.count',
  'claude_code.commit.count',
  'claude_code.cost.usage',
  'claude_code.token.usage',
  'claude_code.code_edit_tool.decision',
  'claude_code.active_time.total',
]);

/**
 * The attributes a metric is broken down by (`type`: added/removed, input/output…, user/cli;
 * `terminal.type`: the usage report's terminal_type).
 */
const DIMENSIONS = ['type', 'model', 'tool_name', 'decision', 'language', 'source', 'terminal.type'] as const;

/** Events kept; `user_prompt` only as a count and a length, never its text. */
const KEPT_EVENTS = new Set(['api_request', 'api_error', 'tool_decision', 'tool_result', 'user_prompt']);

/**
 * Event attributes kept besides the typed columns. An allow-list, so prompt text (`prompt`,
 * `prompt_text`), model answers (`response`), raw API bodies (`body`, `*_body`) and tool inputs
 * (`tool_parameters`, `tool_input`) are never stored, whatever a client is configured to send.
 */
const EVENT_ATTRIBUTES = new Set([
  'tool_name',
  'tool_use_id',
  'decision',
  'source',
  'success',
  'status_code',
  'attempt',
  'prompt_length',
  'speed',
  'query_source',
  'ttft_ms',
  'terminal.type',
  'agent.id',
]);

export type Scalar = string | number | boolean;

/**
 * The longest text value a kept point or event may carry (session ids, models, tool names: tens
 * of characters in practice). A point or record with a longer one is refused whole and counted,
 * for the answer's partial success (OTLP/HTTP, opentelemetry.io/docs/specs/otlp/#partial-success,
 * read 2026-11-29), rather than stored (a 15 MB `tool_name` was) or cut into another series.
 */
export const MAX_VALUE_LENGTH = 1024;

export const TOO_LONG = `a kept attribute value is longer than ${MAX_VALUE_LENGTH} characters`;

const tooLong = (values: Iterable<unknown>) => {
  for (const v of values) if (typeof v === 'string' && v.length > MAX_VALUE_LENGTH) return true;
  return false;
};

export interface MetricPoint {
  metric: string;
  sessionId: string;
  at: Date;
  /** The series' start (ns since the epoch, as text); a cumulative series is keyed by it. */
  start: string;
  cumulative: boolean;
  value: number;
  dims: Record<string, string>;
}

const nano = z.union([z.string().regex(/^\d{1,20}$/, 'expected nanoseconds since the epoch'), z.number()]);
const attributes = z.array(
  z.object({ key: z.string(), value: z.record(z.string(), z.unknown()).optional() }),
);
const point = z.looseObject({
  attributes: attributes.optional(),
  startTimeUnixNano: nano.optional(),
  timeUnixNano: nano.optional(),
  // NaN and infinities (which protobuf carries) are skipped below, not refused with the request.
  asDouble: z.unknown().optional(),
  asInt: z.unknown().optional(),
});
const numbers = z.looseObject({
  dataPoints: z.array(point).optional(),
  aggregationTemporality: z.union([z.number(), z.string()]).optional(),
});
const resource = z.looseObject({ attributes: attributes.optional() }).optional();

const MetricsRequest = z.looseObject({
  resourceMetrics: z
    .array(
      z.looseObject({
        resource,
        scopeMetrics: z
          .array(
            z.looseObject({
              metrics: z
                .array(
                  z.looseObject({ name: z.string(), sum: numbers.optional(), gauge: numbers.optional() }),
                )
                .optional(),
            }),
          )
          .optional(),
      }),
    )
    .optional(),
});

const LogsRequest = z.looseObject({
  resourceLogs: z
    .array(
      z.looseObject({
        resource,
        scopeLogs: z
          .array(
            z.looseObject({
              logRecords: z
                .array(
                  z.looseObject({
                    timeUnixNano: nano.optional(),
                    observedTimeUnixNano: nano.optional(),
                    body: z.record(z.string(), z.unknown()).optional(),
                    attributes: attributes.optional(),
                    eventName: z.string().optional(),
                  }),
                )
                .optional(),
            }),
          )
          .optional(),
      }),
    )
    .optional(),
});

/** An attribute's value as a scalar; arrays, maps and bytes are not kept. */
function scalar(value: Record<string, unknown> | undefined): Scalar | undefined {
  if (!value) return undefined;
  if (typeof value.stringValue === 'string') return value.stringValue;
  if (typeof value.boolValue === 'boolean') return value.boolValue;
  if (value.intValue !== undefined) return finite(value.intValue) ?? undefined;
  if (value.doubleValue !== undefined) return finite(value.doubleValue) ?? undefined;
  return undefined;
}

function finite(v: unknown): number | null {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN;
  return Number.isFinite(n) ? n : null;
}

function attrMap(list: z.infer<typeof attributes> | undefined, into = new Map<string, Scalar>()) {
  for (const a of list ?? []) {
    const v = scalar(a.value);
    if (v !== undefined) into.set(a.key, v);
  }
  return into;
}

/** A time in ns since the epoch (text or number) as a Date; 0 or absent is `fallback`. */
function time(ns: string | number | undefined, fallback: Date): Date {
  if (ns === undefined || ns === 0 || ns === '0') return fallback;
  const ms = typeof ns === 'number' ? ns / 1e6 : Number(BigInt(ns) / 1_000_000n);
  return Number.isFinite(ms) && ms > 0 && ms < 8.64e15 ? new Date(ms) : fallback;
}

const text = (v: Scalar | undefined) => (v === undefined ? null : String(v));
const num = (v: Scalar | undefined) => (v === undefined ? null : finite(v));

/**
 * Claude Code's counters from an export request (decoded protobuf or JSON); other metrics are
 * skipped, points with a value over MAX_VALUE_LENGTH refused (counted in `rejected`).
 */
export function readMetrics(body: unknown, now: Date): { points: MetricPoint[]; rejected: number } {
  const req = parseOr400(MetricsRequest, body);
  const out: MetricPoint[] = [];
  let rejected = 0;
  for (const rm of req.resourceMetrics ?? []) {
    const shared = attrMap(rm.resource?.attributes);
    for (const sm of rm.scopeMetrics ?? [])
      for (const m of sm.metrics ?? []) {
        if (!KEPT_METRICS.has(m.name)) continue;
        const data = m.sum ?? m.gauge;
        const t = data?.aggregationTemporality;
        const cumulative = m.sum !== undefined && (t === 2 || t === 'AGGREGATION_TEMPORALITY_CUMULATIVE');
        for (const p of data?.dataPoints ?? []) {
          const value = finite(p.asDouble ?? p.asInt);
          if (value === null) continue;
          const attrs = attrMap(p.attributes, new Map(shared));
          const dims: Record<string, string> = {};
          for (const d of DIMENSIONS) {
            const v = attrs.get(d);
            if (v !== undefined) dims[d] = String(v);
          }
          const sessionId = text(attrs.get('session.id')) ?? '';
          if (tooLong([sessionId, ...Object.values(dims)])) {
            rejected++;
            continue;
          }
          out.push({
            metric: m.name,
            sessionId,
            at: time(p.timeUnixNano, now),
            start: String(p.startTimeUnixNano ?? '0'),
            cumulative,
            value,
            dims,
          });
        }
      }
  }
  return { points: out, rejected };
}

/**
 * Claude Code's events from a logs export request, stripped to what the receiver keeps; `dropped`
 * counts the events it does not keep, `rejected` those with a kept value over MAX_VALUE_LENGTH.
 */
export function readEvents(
  body: unknown,
  now: Date,
): { events: EventRow[]; dropped: number; rejected: number } {
  const req = parseOr400(LogsRequest, body);
  const events: EventRow[] = [];
  let dropped = 0;
  let rejected = 0;
  for (const rl of req.resourceLogs ?? []) {
    const shared = attrMap(rl.resource?.attributes);
    for (const sl of rl.scopeLogs ?? [])
      for (const r of sl.logRecords ?? []) {
        const attrs = attrMap(r.attributes, new Map(shared));
        const named = text(attrs.get('event.name')) ?? r.eventName ?? text(scalar(r.body)) ?? '';
        const name = named.replace(/^claude_code\./, '');
        if (!KEPT_EVENTS.has(name)) {
          dropped++;
          continue;
        }
        const kept: Record<string, Scalar> = {};
        for (const [k, v] of attrs) if (EVENT_ATTRIBUTES.has(k)) kept[k] = v;
        const ids = ['session.id', 'prompt.id', 'request_id', 'model'].map((k) => text(attrs.get(k)));
        if (tooLong([...ids, ...Object.values(kept)])) {
          rejected++;
          continue;
        }
        const [sessionId, promptId, requestId, model] = ids;
        events.push({
          name,
          sessionId: sessionId ?? '',
          at: time(r.timeUnixNano ?? r.observedTimeUnixNano, now),
          promptId: promptId ?? null,
          requestId: requestId ?? null,
          model: model ?? null,
          costUsd: num(attrs.get('cost_usd')),
          durationMs: num(attrs.get('duration_ms')),
          inputTokens: num(attrs.get('input_tokens')),
          outputTokens: num(attrs.get('output_tokens')),
          cacheReadTokens: num(attrs.get('cache_read_tokens')),
          cacheCreationTokens: num(attrs.get('cache_creation_tokens')),
          attrs: kept,
        });
      }
  }
  return { events, dropped, rejected };
}
