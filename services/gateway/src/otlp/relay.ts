import { fetch, type Dispatcher } from 'undici';
import type { EgressPolicy } from '../lib/egress';
import type { Logger } from '../lib/logger';
import type { EventRow } from '../reports/telemetry-queries';
import type { Store } from '../store';
import type { MetricPoint } from './read';

/** Relayed exports in flight at most; past it a batch is dropped (and counted), never queued without end. */
const MAX_IN_FLIGHT = 64;
const TTL_MS = 30_000;

export interface RelayStats {
  sent: number;
  failed: number;
  dropped: number;
}

/**
 * Sends what the receiver accepted on to the account's own OpenTelemetry collector
 * (`<url>/v1/metrics`, `<url>/v1/logs`), after the answer and off the receiver's path: a slow
 * or dead collector never delays or fails an export. Every connection passes the egress policy.
 * The member's credential is not forwarded. Metrics and logs are relayed as the receiver kept
 * them (OTLP/JSON of the kept points and the stripped events, with the same allow-listed
 * attributes): no prompt text, nor any attribute Keygate does not keep, leaves through the relay.
 */
export class OtlpRelay {
  readonly #store: Pick<Store, 'telemetry'>;
  readonly #dispatcher: Dispatcher;
  readonly #logger: Logger;
  readonly #targets = new Map<string, { url: string | null; until: number }>();
  readonly #pending = new Set<Promise<void>>();
  readonly stats: RelayStats = { sent: 0, failed: 0, dropped: 0 };

  constructor(store: Pick<Store, 'telemetry'>, egress: EgressPolicy, logger: Logger, timeoutMs = 10_000) {
    this.#store = store;
    this.#dispatcher = egress.dispatcher({ connectTimeoutMs: timeoutMs });
    this.#logger = logger;
  }

  /** Forgets an account's cached target (after it is changed on this instance). */
  forget(accountId: string): void {
    this.#targets.delete(accountId);
  }

  send(accountId: string, signal: 'metrics', kept: MetricPoint[]): void;
  send(accountId: string, signal: 'logs', kept: EventRow[]): void;
  send(accountId: string, signal: 'metrics' | 'logs', kept: MetricPoint[] | EventRow[]): void {
    if (kept.length === 0) return;
    if (this.#pending.size >= MAX_IN_FLIGHT) {
      this.stats.dropped++;
      return;
    }
    const body = () =>
      JSON.stringify(
        signal === 'metrics' ? metricsExport(kept as MetricPoint[]) : logsExport(kept as EventRow[]),
      );
    const job = this.#deliver(accountId, signal, body).finally(() => this.#pending.delete(job));
    this.#pending.add(job);
  }

  /** Waits for the relays in flight (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#pending.size) await Promise.allSettled([...this.#pending]);
  }

  async close(): Promise<void> {
    await this.idle();
    await this.#dispatcher.close();
  }

  async #target(accountId: string): Promise<string | null> {
    const now = Date.now();
    const cached = this.#targets.get(accountId);
    if (cached && cached.until > now) return cached.url;
    const url = await this.#store.telemetry.relay(accountId);
    this.#targets.set(accountId, { url, until: now + TTL_MS });
    return url;
  }

  async #deliver(accountId: string, signal: 'metrics' | 'logs', body: () => string): Promise<void> {
    try {
      const base = await this.#target(accountId);
      if (!base) return;
      const res = await fetch(`${base.replace(/\/+$/, '')}/v1/${signal}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: body(),
        dispatcher: this.#dispatcher,
        signal: AbortSignal.timeout(10_000),
      });
      await res.arrayBuffer();
      if (res.ok) this.stats.sent++;
      else {
        this.stats.failed++;
        this.#logger.info('otlp relay refused by the collector', { accountId, status: res.status });
      }
    } catch (error) {
      this.stats.failed++;
      // The error names no URL: a refusal by the egress policy says only that.
      this.#logger.info('otlp relay failed', { accountId, error: (error as Error).message });
    }
  }
}

const attr = (key: string, v: string | number | boolean | null) =>
  v === null
    ? []
    : [
        {
          key,
          value:
            typeof v === 'string'
              ? { stringValue: v }
              : typeof v === 'boolean'
                ? { boolValue: v }
                : { doubleValue: v },
        },
      ];

const RESOURCE = { attributes: attr('service.name', 'claude-code') };
const ns = (d: Date) => String(BigInt(d.getTime()) * 1_000_000n);

/**
 * The kept points as an OTLP/JSON metrics export request: Sums (Claude Code's counters), DELTA
 * or CUMULATIVE as received, each point with its session and the breakdown the receiver keeps.
 */
export function metricsExport(points: MetricPoint[]) {
  const metrics = new Map<string, MetricPoint[]>();
  for (const p of points) {
    const k = `${p.metric}\u0000${p.cumulative}`;
    metrics.set(k, [...(metrics.get(k) ?? []), p]);
  }
  return {
    resourceMetrics: [
      {
        resource: RESOURCE,
        scopeMetrics: [
          {
            scope: { name: 'keygate' },
            metrics: [...metrics.values()].map((ps) => ({
              name: ps[0]!.metric,
              sum: {
                aggregationTemporality: ps[0]!.cumulative ? 2 : 1,
                isMonotonic: true,
                dataPoints: ps.map((p) => ({
                  attributes: [
                    ...attr('session.id', p.sessionId || null),
                    ...Object.entries(p.dims).flatMap(([k, v]) => attr(k, v)),
                  ],
                  startTimeUnixNano: p.start,
                  timeUnixNano: ns(p.at),
                  asDouble: p.value,
                })),
              },
            })),
          },
        ],
      },
    ],
  };
}

/** The kept events as an OTLP/JSON logs export request. */
export function logsExport(events: EventRow[]) {
  return {
    resourceLogs: [
      {
        resource: RESOURCE,
        scopeLogs: [
          {
            scope: { name: 'keygate' },
            logRecords: events.map((e) => ({
              timeUnixNano: ns(e.at),
              body: { stringValue: `claude_code.${e.name}` },
              attributes: [
                ...attr('event.name', e.name),
                ...attr('session.id', e.sessionId),
                ...attr('prompt.id', e.promptId),
                ...attr('request_id', e.requestId),
                ...attr('model', e.model),
                ...attr('cost_usd', e.costUsd),
                ...attr('duration_ms', e.durationMs),
                ...attr('input_tokens', e.inputTokens),
                ...attr('output_tokens', e.outputTokens),
                ...attr('cache_read_tokens', e.cacheReadTokens),
                ...attr('cache_creation_tokens', e.cacheCreationTokens),
                ...Object.entries(e.attrs).flatMap(([k, v]) => attr(k, v)),
              ],
            })),
          },
        ],
      },
    ],
  };
}
