import { z } from 'zod';
import { formatCents, NO_TOKENS, rowDims, type Prices, type Priced } from '../pricing/prices';
import type { Store } from '../store';
import type { UsageRow } from '../call-log/usage-queries';
import { isoSeconds } from './buckets';
import { filtersOf, reportFilters } from './params';
import { timestamp } from './query';
import { UTC } from './time-zone';
import { type ReportFilters, storeFilters } from './usage';
import { rangeOf, wholeHours } from './usage-summary';

/** What cache figures are broken down by, and the row field each fills. */
const BY = { member: 'user_id', key: 'api_key_id' } as const;
export type CacheBy = keyof typeof BY;

/** Prompt caching's effect over a period, for one member or key (or a whole scope). */
export interface CacheFigures {
  id: string | null;
  uncachedInputTokens: number;
  cacheReadTokens: number;
  cacheWrite5mTokens: number;
  cacheWrite1hTokens: number;
  /** Reads / every input token (uncached, reads, writes); null when there was no input. */
  hitRate: number | null;
  /**
   * USD cents the reads saved: the read tokens at the model's base input price minus at its
   * cache-read price, at the catalog row in force each day (live keys, priced models only).
   */
  savedCents: number;
}

/** What reading `tokens` as cache reads saved against paying for them as uncached input. */
export function readSavingsCents(prices: Prices, row: UsageRow, fallbackAt: Date = new Date()): number {
  const tokens = row.cache_read_input_tokens;
  if (tokens <= 0) return 0;
  const dims = rowDims(row, fallbackAt);
  const asInput = prices.callCost(row.model, { ...NO_TOKENS, uncached_input_tokens: tokens }, dims);
  if (!asInput.priced) return 0;
  const asRead = prices.callCost(row.model, { ...NO_TOKENS, cache_read_input_tokens: tokens }, dims);
  return asInput.cents - asRead.cents;
}

export function hitRate(f: Omit<CacheFigures, 'hitRate' | 'savedCents' | 'id'>): number | null {
  const all = f.uncachedInputTokens + f.cacheReadTokens + f.cacheWrite5mTokens + f.cacheWrite1hTokens;
  return all > 0 ? f.cacheReadTokens / all : null;
}

export interface CacheQuery {
  accountId: string;
  from: Date;
  to: Date;
  by: CacheBy;
  filters?: ReportFilters;
}

/**
 * Cache figures by member or key from the hourly rollups (the typed face the dashboard calls):
 * tokens of every call, savings priced per model and day for live keys (test keys cost nothing).
 */
export async function cacheLines(
  { store, prices }: Priced<Pick<Store, 'usage'>>,
  q: CacheQuery,
): Promise<CacheFigures[]> {
  const { from, to } = wholeHours(q.from, q.to);
  const dim = BY[q.by];
  const base = { accountId: q.accountId, from, to, bucketSeconds: null, filters: storeFilters(q.filters) };
  const [tokens, priced] = await Promise.all([
    store.usage.fromRollups({ ...base, groupBy: [dim] }),
    store.usage.fromRollups({ ...base, groupBy: [dim, 'model'], excludeTestKeys: true, pricing: true }),
  ]);
  const saved = new Map<string | null, number>();
  for (const r of priced) saved.set(r[dim], (saved.get(r[dim]) ?? 0) + readSavingsCents(prices, r, to));
  return tokens
    .map((r) => {
      const f = {
        id: r[dim],
        uncachedInputTokens: r.input_tokens,
        cacheReadTokens: r.cache_read_input_tokens,
        cacheWrite5mTokens: r.cache_creation_5m_tokens,
        cacheWrite1hTokens: r.cache_creation_1h_tokens,
        savedCents: saved.get(r[dim]) ?? 0,
      };
      return { ...f, hitRate: hitRate(f) };
    })
    .sort((a, b) => b.savedCents - a.savedCents || b.cacheReadTokens - a.cacheReadTokens);
}

export const CacheReportParams = z.object({
  by: z.enum(['member', 'key']),
  starting_at: timestamp.optional(),
  ending_at: timestamp.optional(),
  ...reportFilters,
});

/** A line under the API's names: the provider's token names, the rate, and the saving as a cost amount. */
export function cacheJson(f: CacheFigures) {
  return {
    uncached_input_tokens: f.uncachedInputTokens,
    cache_read_input_tokens: f.cacheReadTokens,
    cache_creation: {
      ephemeral_5m_input_tokens: f.cacheWrite5mTokens,
      ephemeral_1h_input_tokens: f.cacheWrite1hTokens,
    },
    cache_hit_rate: f.hitRate === null ? null : Math.round(f.hitRate * 10_000) / 10_000,
    saved_by_cache_reads: { currency: 'USD' as const, amount: formatCents(f.savedCents) },
  };
}

/**
 * `GET /v1/organizations/cache_report`: Keygate's addition beside the usage summary, prompt
 * caching's effect by member or key over a range (default: this month to now).
 */
export async function cacheReport(
  deps: Priced<Pick<Store, 'usage'>>,
  accountId: string,
  q: z.infer<typeof CacheReportParams>,
  now: number,
  timeZone = UTC,
) {
  const { from, to } = rangeOf(q, now, timeZone);
  const lines = await cacheLines(deps, { accountId, from, to, by: q.by, filters: filtersOf(q) });
  return {
    type: 'cache_report' as const,
    by: q.by,
    starting_at: isoSeconds(from),
    ending_at: isoSeconds(to),
    data: lines.map((l) => ({ [BY[q.by]]: l.id, ...cacheJson(l) })),
  };
}
