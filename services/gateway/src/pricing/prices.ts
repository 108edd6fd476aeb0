import type { UsageRow } from '../call-log/usage-queries';
import { type ProviderUsage, type UsageFigures, usageFigures } from '../usage/usage';
import { BUNDLED_CATALOG, familyOf, type PriceCatalog, type Rates } from './catalog/catalog';

/**
 * Cost is derived, never stored: tokens × the catalog row in force at the call's time
 * (pricing/catalog/price-catalog.json plus the operator's rows). Every reader (reports, the
 * dashboard, budgets, spend caps, metrics, invoices) prices through a `Prices` it is given
 * (the kernel builds one per gateway), never through module state.
 */
export class Prices {
  #catalog: PriceCatalog;

  constructor(catalog: PriceCatalog = BUNDLED_CATALOG) {
    this.#catalog = catalog;
  }

  /** The catalog in force now. */
  get catalog(): PriceCatalog {
    return this.#catalog;
  }

  /** Puts `catalog` in force (the price book does, when operator rows change). */
  use(catalog: PriceCatalog): void {
    this.#catalog = catalog;
  }

  callCost(model: string | null, counts: TokenCounts, dims: PricingDims): CallCost {
    return callCost(model, counts, dims, this.#catalog);
  }

  /** The cost of one rollup or call-log row (its own day and dimensions). */
  rowCost(row: UsageRow, fallbackAt: Date = new Date()): CallCost {
    return callCost(row.model, rowCounts(row), rowDims(row, fallbackAt), this.#catalog);
  }

  /** Cents of `counts` of `model` at `at` (standard speed, global, not batched): the estimate when unpriced. */
  usageCostCents(model: string | null, counts: TokenCounts, at: Date = new Date()): number {
    return callCost(model, counts, { at }, this.#catalog).cents;
  }

  /** The Message Batches multiplier in force for a model (null when the model is unpriced then). */
  batchMultiplier(model: string, at: Date): number | null {
    return this.#catalog.lookup(model, at) ? this.#catalog.batchMultiplier : null;
  }

  /**
   * A call log entry's cost: USD cents at the price in force when it was made, or null with
   * `unpriced` when the catalog has no price for it (never a guess).
   */
  callCostJson(r: {
    model: string | null;
    usage: unknown;
    createdAt: Date;
    batch?: boolean;
    test?: boolean;
  }) {
    // A test key's call costs nothing: the emulator answered it and nobody is billed.
    if (r.test) return { currency: 'USD' as const, amount: '0', unpriced: false, test: true };
    const u = usageFigures(r.usage as ProviderUsage | null, r.batch ?? false);
    const cost = this.callCost(r.model, figureCounts(u), figureDims(u, r.createdAt));
    return {
      currency: 'USD' as const,
      amount: cost.priced ? formatCents(cost.cents) : null,
      unpriced: !cost.priced,
    };
  }
}

/** A report's reach: its queries, and the gateway's prices to cost what they find. */
export interface Priced<S> {
  store: S;
  prices: Prices;
}

/** Token counts the price applies to, in the provider's usage-report names. */
export interface TokenCounts {
  uncached_input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  'cache_creation.ephemeral_5m_input_tokens': number;
  'cache_creation.ephemeral_1h_input_tokens': number;
  web_search_requests: number;
}

/** What besides the tokens decides a call's price. */
export interface PricingDims {
  /** When the call was made: the catalog row in force then applies. */
  at: Date;
  /** usage.speed: 'fast' or 'standard'. */
  speed?: string | null;
  /** usage.inference_geo: 'us', 'global', … */
  inferenceGeo?: string | null;
  /** Made through the Message Batches API. */
  batch?: boolean;
  /** The prompt (input + cache reads + cache writes), for prompt-size tiers; rollups give its band. */
  promptTokens?: number;
}

import { PROMPT_BANDS, promptBand } from '../usage/usage';

export { PROMPT_BANDS, promptBand };

/**
 * The call log's endpoint of one result of a message batch; its record carries `batch: true`,
 * which prices it at the catalog's batch multiplier.
 */
export const BATCH_ENDPOINT = 'messages.batch';

/**
 * The call log's endpoint of what a Managed Agents session used since Keygate last looked (its
 * running totals grew): priced like a messages call of the session's agent's model.
 */
export const SESSION_ENDPOINT = 'sessions.usage';

/** No tokens of any kind: a base for counts built by hand. */
export const NO_TOKENS: TokenCounts = {
  uncached_input_tokens: 0,
  output_tokens: 0,
  cache_read_input_tokens: 0,
  'cache_creation.ephemeral_5m_input_tokens': 0,
  'cache_creation.ephemeral_1h_input_tokens': 0,
  web_search_requests: 0,
};

export type TokenType = Exclude<keyof TokenCounts, 'web_search_requests'>;

export const TOKEN_TYPES: readonly TokenType[] = [
  'uncached_input_tokens',
  'output_tokens',
  'cache_read_input_tokens',
  'cache_creation.ephemeral_5m_input_tokens',
  'cache_creation.ephemeral_1h_input_tokens',
];

const RATE: Record<TokenType, keyof Rates> = {
  uncached_input_tokens: 'input',
  output_tokens: 'output',
  cache_read_input_tokens: 'cache_read',
  'cache_creation.ephemeral_5m_input_tokens': 'cache_write_5m',
  'cache_creation.ephemeral_1h_input_tokens': 'cache_write_1h',
};

/** One call's (or one rollup row's) cost. */
export interface CallCost {
  /** False when the catalog has no price for this model (or its fast mode) at that time. */
  priced: boolean;
  /**
   * USD cents. Unpriced: the fail-safe estimate (the highest rates the model's family has had,
   * × the highest fast multiplier when fast), which budgets and spend caps count; reports leave
   * it out and name the model instead.
   */
  cents: number;
  /** Cents per token type, and web search. */
  parts: Record<TokenType | 'web_search', number>;
  displayName: string;
}

/** The highest fast multiplier the catalog knows: an unpriced fast call is estimated with it. */
function maxFast(catalog: PriceCatalog): number {
  return Math.max(1, ...catalog.data.models.flatMap((m) => m.prices.map((r) => r.fast?.multiplier ?? 1)));
}

/**
 * The cost of `counts` of `model` under `dims`, at the catalog row in force at `dims.at`.
 * This is the one price function: admission's reservations and batches call it too.
 */
export function callCost(
  model: string | null,
  counts: TokenCounts,
  dims: PricingDims,
  catalog: PriceCatalog,
): CallCost {
  const found = catalog.lookup(model, dims.at);
  const billable = TOKEN_TYPES.some((t) => counts[t] > 0) || counts.web_search_requests > 0;
  const fast = dims.speed === 'fast';
  const prompt =
    dims.promptTokens ??
    counts.uncached_input_tokens +
      counts.cache_read_input_tokens +
      counts['cache_creation.ephemeral_5m_input_tokens'] +
      counts['cache_creation.ephemeral_1h_input_tokens'];
  let rates: Rates;
  let inMult = 1;
  let outMult = 1;
  // Nothing billed (a refused call) costs nothing, priced or not.
  let priced = found !== null || !billable;
  if (found) {
    const tier = [...(found.row.prompt_tiers ?? [])]
      .sort((a, b) => b.above_prompt_tokens - a.above_prompt_tokens)
      .find((t) => prompt > t.above_prompt_tokens);
    rates = tier ?? found.row;
    if (fast) {
      const f = found.row.fast;
      if (!f) priced = false;
      else if (f.long_prompt && prompt > f.long_prompt.above_prompt_tokens) {
        inMult = f.long_prompt.input_multiplier;
        outMult = f.long_prompt.output_multiplier;
      } else inMult = outMult = f.multiplier;
    }
  } else {
    rates = catalog.familyCeiling(familyOf(model ?? ''));
  }
  if (!priced) inMult = outMult = fast ? maxFast(catalog) : 1;
  const geo = found ? catalog.geoMultiplier(found.model, dims.inferenceGeo ?? null) : 1;
  const batch = dims.batch ? catalog.batchMultiplier : 1;
  const parts = {
    web_search: (counts.web_search_requests * catalog.webSearchUsdPer1000) / 10,
  } as CallCost['parts'];
  let cents = parts.web_search;
  for (const t of TOKEN_TYPES) {
    const mult = t === 'output_tokens' ? outMult : inMult;
    // USD per MTok × tokens / 1e6 × 100 cents.
    parts[t] = (counts[t] * rates[RATE[t]] * mult * geo * batch) / 10_000;
    cents += parts[t];
  }
  return { priced, cents, parts, displayName: found?.model.display_name ?? model ?? 'unknown model' };
}

/** The pricing dimensions of a rollup or call-log row (columns the pricing queries select). */
export function rowDims(row: UsageRow, fallbackAt: Date): PricingDims {
  return {
    at: row.price_day ?? row.bucket ?? fallbackAt,
    speed: row.speed ?? null,
    inferenceGeo: row.inference_geo ?? null,
    batch: row.batch ?? false,
    promptTokens: row.prompt_band ? row.prompt_band + 1 : 0,
  };
}

/** The counts of a usage row (rollups or call log) under the report's names. */
export function rowCounts(
  row: Pick<
    UsageRow,
    | 'input_tokens'
    | 'output_tokens'
    | 'cache_read_input_tokens'
    | 'cache_creation_5m_tokens'
    | 'cache_creation_1h_tokens'
    | 'web_search_requests'
  >,
): TokenCounts {
  return {
    uncached_input_tokens: row.input_tokens,
    output_tokens: row.output_tokens,
    cache_read_input_tokens: row.cache_read_input_tokens,
    'cache_creation.ephemeral_5m_input_tokens': row.cache_creation_5m_tokens,
    'cache_creation.ephemeral_1h_input_tokens': row.cache_creation_1h_tokens,
    web_search_requests: row.web_search_requests,
  };
}

/** The counts of one call's usage figures under the report's names. */
export function figureCounts(u: UsageFigures): TokenCounts {
  return {
    uncached_input_tokens: u.inputTokens,
    output_tokens: u.outputTokens,
    cache_read_input_tokens: u.cacheReadInputTokens,
    'cache_creation.ephemeral_5m_input_tokens': u.cacheCreation5mTokens,
    'cache_creation.ephemeral_1h_input_tokens': u.cacheCreation1hTokens,
    web_search_requests: u.webSearchRequests,
  };
}

/** One call's pricing dimensions from its usage figures. */
export function figureDims(u: UsageFigures, at: Date): PricingDims {
  return {
    at,
    speed: u.speed,
    inferenceGeo: u.inferenceGeo,
    batch: u.batch,
    promptTokens: u.inputTokens + u.cacheReadInputTokens + u.cacheCreation5mTokens + u.cacheCreation1hTokens,
  };
}

/** Amounts as the provider's cost report writes them: lowest currency unit, as a decimal string. */
export function formatCents(cents: number): string {
  return (Math.round(cents * 1e6) / 1e6).toFixed(6).replace(/\.?0+$/, '') || '0';
}
