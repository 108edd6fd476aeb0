import type { UsageRow } from '../store';
import type { UsageFigures } from '../usage/usage';

/**
 * The provider's list prices in USD per million tokens (per 1,000 searches for web search),
 * standard tier, as published for each model family. Cache writes cost 1.25× input for the
 * 5-minute TTL and 2× for the 1-hour TTL; cache reads 0.1× input. Long-context (>200k) and
 * batch discounts are not modelled: reports are estimates of what the provider bills.
 */
export interface ModelPrice {
  /** Model ids starting with this prefix use this price; the longest matching prefix wins. */
  prefix: string;
  displayName: string;
  input: number;
  output: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
  cacheRead: number;
}

const family = (prefix: string, displayName: string, input: number, output: number): ModelPrice => ({
  prefix,
  displayName,
  input,
  output,
  cacheWrite5m: input * 1.25,
  cacheWrite1h: input * 2,
  cacheRead: input / 10,
});

export const MODEL_PRICES: readonly ModelPrice[] = [
  family('claude-opus-4-5', 'Claude Opus 4.5', 5, 25),
  family('claude-opus-4-1', 'Claude Opus 4.1', 15, 75),
  family('claude-opus-4', 'Claude Opus 4', 15, 75),
  family('claude-3-opus', 'Claude Opus 3', 15, 75),
  family('claude-sonnet-4-5', 'Claude Sonnet 4.5', 3, 15),
  family('claude-sonnet-4', 'Claude Sonnet 4', 3, 15),
  family('claude-3-7-sonnet', 'Claude Sonnet 3.7', 3, 15),
  family('claude-3-5-sonnet', 'Claude Sonnet 3.5', 3, 15),
  family('claude-haiku-4-5', 'Claude Haiku 4.5', 1, 5),
  family('claude-3-5-haiku', 'Claude Haiku 3.5', 0.8, 4),
  family('claude-3-haiku', 'Claude Haiku 3', 0.25, 1.25),
];

/** USD per web search request ($10 per 1,000). */
export const WEB_SEARCH_USD = 0.01;

// An unlisted model is priced at the highest rates in the table: spend caps then stop too
// early rather than too late, and the report says so in the description.
const UNLISTED: ModelPrice = { ...family('', 'Unlisted model (priced at the highest rates)', 15, 75) };

const byLength = [...MODEL_PRICES].sort((a, b) => b.prefix.length - a.prefix.length);

/**
 * The call log's endpoint of one result of a message batch. The Batch API bills input and output
 * at half the list price (https://platform.claude.com/docs/en/about-claude/pricing, "Batch
 * processing", read 2026-11-25): `{ batch: true }` below is the one place that applies it.
 */
export const BATCH_ENDPOINT = 'messages.batch';
export const BATCH_MULTIPLIER = 0.5;

export function priceFor(model: string | null, opts: { batch?: boolean } = {}): ModelPrice {
  const price = model ? (byLength.find((p) => model.startsWith(p.prefix)) ?? UNLISTED) : UNLISTED;
  if (!opts.batch) return price;
  return { ...price, input: price.input * BATCH_MULTIPLIER, output: price.output * BATCH_MULTIPLIER };
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

export type TokenType = Exclude<keyof TokenCounts, 'web_search_requests'>;

export const TOKEN_TYPES: readonly TokenType[] = [
  'uncached_input_tokens',
  'output_tokens',
  'cache_read_input_tokens',
  'cache_creation.ephemeral_5m_input_tokens',
  'cache_creation.ephemeral_1h_input_tokens',
];

const RATE: Record<TokenType, keyof ModelPrice> = {
  uncached_input_tokens: 'input',
  output_tokens: 'output',
  cache_read_input_tokens: 'cacheRead',
  'cache_creation.ephemeral_5m_input_tokens': 'cacheWrite5m',
  'cache_creation.ephemeral_1h_input_tokens': 'cacheWrite1h',
};

/** Cost in USD cents of `count` units of one token type of a model. */
export function tokenCostCents(price: ModelPrice, type: TokenType, count: number): number {
  return (count * (price[RATE[type]] as number)) / 10_000;
}

export function webSearchCostCents(count: number): number {
  return count * WEB_SEARCH_USD * 100;
}

/** Cost in USD cents of all the usage of one model. */
export function usageCostCents(
  model: string | null,
  counts: TokenCounts,
  opts: { batch?: boolean } = {},
): number {
  const price = priceFor(model, opts);
  let cents = webSearchCostCents(counts.web_search_requests);
  for (const type of TOKEN_TYPES) cents += tokenCostCents(price, type, counts[type]);
  return cents;
}

/** Amounts as the provider's cost report writes them: lowest currency unit, as a decimal string. */
export function formatCents(cents: number): string {
  return (Math.round(cents * 1e6) / 1e6).toFixed(6).replace(/\.?0+$/, '') || '0';
}
