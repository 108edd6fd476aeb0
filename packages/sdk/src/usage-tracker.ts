import { addTokens, emptySummary, type UsageRecord, type UsageSummary } from './usage-types';

export type UsageListener = (record: UsageRecord) => void;

export interface UsageTrackerOptions {
  /** Records kept for `recent()`; default 1,000. Totals cover every call regardless. */
  keep?: number;
  /** Where a throwing listener's error goes; by default a console warning. The call is never affected. */
  onListenerError?: (error: unknown) => void;
}

/**
 * Running usage of one client and its copies (`client.group()`, `client.withOptions()`):
 * totals, totals per request group, errors and retries per category, and a feed of records.
 *
 * @example
 * const client = new Keygate();
 * await client.messages.create({ model, max_tokens: 256, messages });
 * client.usage.total();        // { calls: 1, input_tokens: …, output_tokens: …, errors: {…}, retries: {…} }
 * client.usage.byGroup();      // Map { 'grp_…' => { calls, input_tokens, … } }
 * const off = client.usage.on((record) => metrics.push(record));
 * for await (const record of client.usage) console.log(record.model, record.usage);
 */
export class UsageTracker implements AsyncIterable<UsageRecord> {
  #total = emptySummary();
  #groups = new Map<string, UsageSummary>();
  #recent: UsageRecord[] = [];
  #listeners = new Set<UsageListener>();
  readonly #keep: number;
  readonly #onListenerError: (error: unknown) => void;

  constructor(opts: UsageTrackerOptions = {}) {
    this.#keep = Math.max(0, opts.keep ?? 1_000);
    this.#onListenerError =
      opts.onListenerError ?? ((error) => console.warn('keygate: a usage listener threw', error));
  }

  /** Adds one call to the totals and tells every listener. */
  add(record: UsageRecord): void {
    apply(this.#total, record);
    if (record.groupId !== null) apply(this.#groupSummary(record.groupId), record);
    if (this.#keep > 0) {
      this.#recent.push(record);
      if (this.#recent.length > this.#keep) this.#recent.splice(0, this.#recent.length - this.#keep);
    }
    for (const listener of this.#listeners) {
      try {
        listener(record);
      } catch (error) {
        this.#onListenerError(error);
      }
    }
  }

  /** Counts tool calls whose input did not match the tool's schema (the tool loop calls this). */
  addMalformedToolCalls(groupId: string | null, count = 1): void {
    this.#total.errors.malformed_tool_call += count;
    if (groupId !== null) this.#groupSummary(groupId).errors.malformed_tool_call += count;
  }

  /** Totals over every call so far. */
  total(): UsageSummary {
    return copy(this.#total);
  }

  /** Totals per request group (calls without a group are only in `total()`). */
  byGroup(): Map<string, UsageSummary> {
    return new Map([...this.#groups].map(([id, summary]) => [id, copy(summary)]));
  }

  /** Totals of one request group; zeros when it made no call yet. */
  group(id: string): UsageSummary {
    const summary = this.#groups.get(id);
    return summary ? copy(summary) : emptySummary();
  }

  /** The most recent records, oldest first. */
  recent(): UsageRecord[] {
    return this.#recent.slice();
  }

  /** Calls `listener` with each future record; returns the function that stops it. */
  on(listener: UsageListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Future records as an async iterator; it ends when `signal` aborts or the loop breaks. */
  watch(opts: { signal?: AbortSignal } = {}): AsyncIterableIterator<UsageRecord> {
    const queue: UsageRecord[] = [];
    let wake: (() => void) | null = null;
    let done = false;
    const off = this.on((record) => {
      queue.push(record);
      wake?.();
    });
    const finish = () => {
      done = true;
      off();
      wake?.();
    };
    if (opts.signal?.aborted) finish();
    else opts.signal?.addEventListener('abort', finish, { once: true });
    const iterator: AsyncIterableIterator<UsageRecord> = {
      async next() {
        while (queue.length === 0 && !done) await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
        const value = queue.shift();
        return value === undefined ? { value: undefined, done: true } : { value, done: false };
      },
      async return() {
        finish();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  [Symbol.asyncIterator](): AsyncIterator<UsageRecord> {
    return this.watch();
  }

  /** Forgets every total and record; listeners stay. */
  reset(): void {
    this.#total = emptySummary();
    this.#groups.clear();
    this.#recent = [];
  }

  #groupSummary(id: string): UsageSummary {
    let summary = this.#groups.get(id);
    if (!summary) this.#groups.set(id, (summary = emptySummary()));
    return summary;
  }
}

function apply(summary: UsageSummary, record: UsageRecord): void {
  summary.calls += 1;
  if (record.usage) addTokens(summary, record.usage);
  if (record.errorCategory) summary.errors[record.errorCategory] += 1;
  for (const category of record.retryCategories) summary.retries[category] += 1;
}

function copy(s: UsageSummary): UsageSummary {
  return {
    ...s,
    cache_creation: { ...s.cache_creation },
    server_tool_use: { ...s.server_tool_use },
    errors: { ...s.errors },
    retries: { ...s.retries },
  };
}
