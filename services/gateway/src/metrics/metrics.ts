import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { figureCounts, figureDims, type Prices } from '../pricing/prices';
import type { LimitsStatus } from '../admission';
import type { CallRecord } from '../lib/call-record';
import type { CallLogStatus } from '../call-log/writer';
import { usageFigures } from '../usage/usage';
import { CallHistogram } from './call-histogram';
import { BoundedLabel, ERROR_CATEGORIES, errorCategory, type ErrorCategory } from './labels';

/** How an app key was found (auth/resolver.ts's LookupResult). */
type KeyLookup = 'hit' | 'miss' | 'stale' | 'unavailable';

export interface MetricsSources {
  /** Absent when the call log is off; `spooled` when records reach a disk spool before the database. */
  callLog?: { status: () => CallLogStatus; spooled: boolean };
  limits?: () => LimitsStatus;
  keyCacheEntries?: () => number;
}

export interface MetricsOptions {
  maxAccounts?: number;
  maxModels?: number;
  clock?: () => number;
}

const TOKEN_TYPES = ['input', 'cache_write_5m', 'cache_write_1h', 'cache_read', 'output'] as const;
const STATUS_CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const;
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const OVERHEAD_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
const TTFB_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

type Series = ReturnType<CallHistogram['series']>;
interface Timings {
  latency: Series;
  ttfb: Series;
  overhead: Series;
}

/** Running totals of one (account, model, endpoint): plain numbers, turned into series at scrape time. */
interface Slot {
  labels: { account: string; model: string; endpoint: string };
  calls: number[];
  tokens: number[];
  costUsd: number;
  /** Calls on a model (or mode) with no price: their cost is left out of costUsd. */
  unpriced: number;
  retried: number;
}

/** Metrics are collected only when something can read them: a token, or a port of their own. */
export function metricsFor(
  config: { metricsToken: string | null; metricsPort: number | null; metricsMaxAccounts: number },
  sources: MetricsSources,
  prices: Prices,
  clock?: () => number,
): GatewayMetrics | null {
  if (!config.metricsToken && config.metricsPort === null) return null;
  return new GatewayMetrics(prices, sources, {
    maxAccounts: config.metricsMaxAccounts,
    ...(clock ? { clock } : {}),
  });
}

/**
 * The gateway's Prometheus metrics, in a registry of its own (several gateways may share a
 * process in tests). The call path only adds to plain numbers (`observeCall`); prom-client
 * builds the series when `/metrics` is scraped. Account and model labels are capped
 * (BoundedLabel); key ids are never labels.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  readonly #accounts: BoundedLabel;
  readonly #models: BoundedLabel;
  readonly #slots = new Map<string, Slot>();
  readonly #errors = new Map<ErrorCategory, number>(ERROR_CATEGORIES.map((c) => [c, 0]));
  readonly #keyCache: Record<KeyLookup, number> = { hit: 0, miss: 0, stale: 0, unavailable: 0 };
  readonly #invalidations = { received: 0, lastAt: null as number | null };
  readonly #latency: CallHistogram;
  readonly #ttfb: CallHistogram;
  readonly #overhead: CallHistogram;
  /** The three histograms' series of one (endpoint, stream), found by one short key. */
  readonly #timings = new Map<string, Timings>();
  readonly #now: () => number;
  readonly #prices: Prices;

  constructor(prices: Prices, sources: MetricsSources = {}, opts: MetricsOptions = {}) {
    this.#prices = prices;
    this.#accounts = new BoundedLabel(opts.maxAccounts ?? 100);
    this.#models = new BoundedLabel(opts.maxModels ?? 50);
    this.#now = opts.clock ?? Date.now;
    const slots = this.#slots;
    const counter = scraped(Counter, this.registry);
    const gauge = scraped(Gauge, this.registry);

    counter(
      'keygate_calls_total',
      'Calls through the provider-compatible routes, by account, model, endpoint and status class.',
      ['account', 'model', 'endpoint', 'status_class'],
      (c) => {
        for (const s of slots.values())
          s.calls.forEach((n, i) => n > 0 && c.inc({ ...s.labels, status_class: STATUS_CLASSES[i]! }, n));
      },
    );
    counter(
      'keygate_tokens_total',
      'Tokens by type as the provider counted them (input is uncached input).',
      ['account', 'model', 'type'],
      (c) => {
        for (const {
          labels: { account, model },
          tokens,
        } of slots.values())
          tokens.forEach((n, i) => n > 0 && c.inc({ account, model, type: TOKEN_TYPES[i]! }, n));
      },
    );
    counter(
      'keygate_cost_usd_total',
      'Cost in USD at the list price in force (pricing/prices.ts callCost); unpriced calls are left out.',
      ['account', 'model'],
      (c) => {
        for (const {
          labels: { account, model },
          costUsd,
        } of slots.values())
          if (costUsd > 0) c.inc({ account, model }, costUsd);
      },
    );
    counter(
      'keygate_unpriced_calls_total',
      'Calls on a model the price catalog has no price for (their cost is not in keygate_cost_usd_total).',
      ['account', 'model'],
      (c) => {
        for (const {
          labels: { account, model },
          unpriced,
        } of slots.values())
          if (unpriced > 0) c.inc({ account, model }, unpriced);
      },
    );
    counter(
      'keygate_retried_calls_total',
      'Calls that were retries of an earlier one (x-stainless-retry-count > 0).',
      ['account', 'model'],
      (c) => {
        for (const {
          labels: { account, model },
          retried,
        } of slots.values())
          if (retried > 0) c.inc({ account, model }, retried);
      },
    );
    counter('keygate_call_errors_total', 'Calls that failed, by category.', ['category'], (c) => {
      for (const [category, n] of this.#errors) c.inc({ category }, n);
    });
    counter(
      'keygate_key_cache_lookups_total',
      'App key lookups, answered from memory (hit), from the database (miss), from memory past the cache life while the database is unreachable (stale), or not at all for that reason (unavailable, a 503).',
      ['result'],
      (c) => {
        for (const [result, n] of Object.entries(this.#keyCache)) c.inc({ result }, n);
      },
    );
    counter(
      'keygate_invalidations_received_total',
      'Key changes this instance received (LISTEN/NOTIFY or the poll) and applied to its key cache.',
      [],
      (c) => {
        c.inc(this.#invalidations.received);
      },
    );
    gauge(
      'keygate_invalidation_last_applied_age_seconds',
      'Seconds since this instance last applied a key change (NaN: none yet).',
      [],
      (g) => {
        const at = this.#invalidations.lastAt;
        g.set(at === null ? Number.NaN : (this.#now() - at) / 1000);
      },
    );
    if (sources.keyCacheEntries)
      gauge('keygate_key_cache_entries', 'App keys held in memory (known and unknown).', [], (g) =>
        g.set(sources.keyCacheEntries!()),
      );
    if (sources.callLog) callLogMetrics(sources.callLog, counter, gauge);
    if (sources.limits) limitsMetrics(sources.limits, gauge);

    this.#latency = new CallHistogram(
      'keygate_upstream_latency_seconds',
      'Calls answered by the upstream: from the request to the last byte of the answer.',
      LATENCY_BUCKETS,
      this.registry,
    );
    this.#ttfb = new CallHistogram(
      'keygate_upstream_ttfb_seconds',
      "Time to the first byte of the upstream's answer body.",
      TTFB_BUCKETS,
      this.registry,
    );
    this.#overhead = new CallHistogram(
      'keygate_overhead_seconds',
      "Time a call spent in the gateway before its answer's headers went out, the upstream's time left out (the keygate-overhead-ms header).",
      OVERHEAD_BUCKETS,
      this.registry,
    );
    collectDefaultMetrics({ register: this.registry });
  }

  /** Counts one finished call; called from the call record path, so it does no I/O. */
  observeCall(r: CallRecord): void {
    const slot = this.#slot(r);
    const klass = Math.min(Math.max(Math.floor(r.status / 100) - 2, 0), 3);
    slot.calls[klass]!++;
    if (r.retryCount > 0) slot.retried++;
    const category = errorCategory(r);
    if (category) this.#errors.set(category, this.#errors.get(category)! + 1);
    if (r.usage) {
      const u = usageFigures(r.usage, r.batch);
      const t = slot.tokens;
      t[0]! += u.inputTokens;
      t[1]! += u.cacheCreation5mTokens;
      t[2]! += u.cacheCreation1hTokens;
      t[3]! += u.cacheReadInputTokens;
      t[4]! += u.outputTokens;
      const cost = this.#prices.callCost(r.model, figureCounts(u), figureDims(u, r.createdAt));
      if (r.test) {
        // Test keys' calls cost nothing.
      } else if (cost.priced) slot.costUsd += cost.cents / 100;
      else slot.unpriced++;
    }
    if (r.ttfbMs !== null || r.upstreamRequestId !== null) {
      const t = this.timingsOf(r.endpoint, r.stream);
      this.#latency.observe(t.latency, r.latencyMs / 1000);
      if (r.ttfbMs !== null) this.#ttfb.observe(t.ttfb, r.ttfbMs / 1000);
      if (r.overheadMs != null) this.#overhead.observe(t.overhead, r.overheadMs / 1000);
    }
  }

  private timingsOf(endpoint: string, stream: boolean): Timings {
    const key = stream ? `${endpoint}+` : endpoint;
    let t = this.#timings.get(key);
    if (!t) {
      const labels = { endpoint, stream: stream ? 'true' : 'false' };
      t = {
        latency: this.#latency.series(key, labels),
        ttfb: this.#ttfb.series(key, labels),
        overhead: this.#overhead.series(key, labels),
      };
      this.#timings.set(key, t);
    }
    return t;
  }

  #slot(r: CallRecord): Slot {
    const account = this.#accounts.value(r.accountId);
    const model = this.#models.value(r.model);
    const id = `${account}\n${model}\n${r.endpoint}`;
    let slot = this.#slots.get(id);
    if (!slot) {
      slot = {
        labels: { account, model, endpoint: r.endpoint },
        calls: [0, 0, 0, 0],
        tokens: [0, 0, 0, 0, 0],
        costUsd: 0,
        unpriced: 0,
        retried: 0,
      };
      this.#slots.set(id, slot);
    }
    return slot;
  }

  keyLookup(result: KeyLookup): void {
    this.#keyCache[result]++;
  }

  invalidationApplied(): void {
    this.#invalidations.received++;
    this.#invalidations.lastAt = this.#now();
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/**
 * A metric whose values are restated from running totals at each scrape: `fill` sets them
 * after a reset, so the call path never touches prom-client.
 */
function scraped<M extends Counter<any> | Gauge<any>>(Kind: new (config: any) => M, registry: Registry) {
  return <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    fill: (m: M) => void,
  ): void => {
    new Kind({
      name,
      help,
      labelNames,
      registers: [registry],
      collect(this: M) {
        this.reset();
        fill(this);
      },
    });
  };
}

type AddCounter = ReturnType<typeof scraped<Counter<string>>>;
type AddGauge = ReturnType<typeof scraped<Gauge<string>>>;

function callLogMetrics(
  log: NonNullable<MetricsSources['callLog']>,
  counter: AddCounter,
  gauge: AddGauge,
): void {
  const { status } = log;
  gauge(
    'keygate_call_log_queue_depth',
    'Call records waiting in memory to be written to the database.',
    [],
    (g) => g.set(status().queued),
  );
  counter(
    'keygate_call_log_dropped_total',
    'Call records lost: no room in the spool and none in memory.',
    [],
    (c) => c.inc(status().dropped),
  );
  if (!log.spooled) return;
  gauge(
    'keygate_call_log_spool_bytes',
    'Bytes of call records in the local spool, not yet committed to the database.',
    [],
    (g) => g.set(status().spoolBytes),
  );
  gauge(
    'keygate_call_log_spool_oldest_age_seconds',
    'Age of the oldest call record not yet committed to the database (0: none waits).',
    [],
    (g) => g.set((status().oldestAgeMs ?? 0) / 1000),
  );
  gauge(
    'keygate_call_log_spool_full',
    '1 while the spool has no room: new call records are held in memory only.',
    [],
    (g) => g.set(status().spoolFull ? 1 : 0),
  );
}

function limitsMetrics(status: () => LimitsStatus, gauge: AddGauge): void {
  gauge(
    'keygate_limits_redis_down',
    '1 while Redis (REDIS_URL) is unreachable; 0 when it answers or is not used.',
    [],
    (g) => g.set(status().redisDown ? 1 : 0),
  );
  gauge(
    'keygate_limits_on_redis_down',
    'What limits do while Redis is down (KEYGATE_LIMITS_ON_REDIS_DOWN): 1 for the mode in force.',
    ['mode'],
    (g) => {
      const mode = status().onRedisDown;
      g.set({ mode: 'open' }, mode === 'open' ? 1 : 0);
      g.set({ mode: 'closed' }, mode === 'closed' ? 1 : 0);
    },
  );
  gauge(
    'keygate_limits_backend',
    'Where per-key limit counters live: 1 for the backend in use.',
    ['backend'],
    (g) => g.set({ backend: status().backend }, 1),
  );
}
