import type { Registry } from 'prom-client';

/** One series: counts per bucket (not cumulative until scraped), sum and count. */
export interface Series {
  labels: Record<string, string>;
  buckets: Float64Array;
  sum: number;
  count: number;
}

/**
 * A Prometheus histogram the call path feeds with plain numbers: `observe` finds the bucket
 * and adds, nothing else (prom-client's own observe validates and hashes the labels on every
 * call, about as much work as the rest of the metrics together). The exposition is built
 * when `/metrics` is scraped, through the registry like any prom-client metric.
 */
export class CallHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, Series>();

  constructor(name: string, help: string, bounds: readonly number[], registry: Registry) {
    this.name = name;
    this.help = help;
    this.#bounds = bounds;
    registry.registerMetric(this as never);
  }

  /** The series of one label set, looked up once by a short key the caller builds. */
  series(key: string, labels: Record<string, string>): Series {
    let s = this.#series.get(key);
    if (!s) {
      s = { labels, buckets: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 };
      this.#series.set(key, s);
    }
    return s;
  }

  observe(s: Series, value: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    s.buckets[i]!++;
    s.sum += value;
    s.count++;
  }

  get(): { name: string; help: string; type: string; aggregator: string; values: unknown[] } {
    const values: unknown[] = [];
    for (const s of this.#series.values()) {
      let cumulative = 0;
      this.#bounds.forEach((le, i) => {
        cumulative += s.buckets[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.#series.clear();
  }
}
