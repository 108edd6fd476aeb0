/**
 * The provider's published list prices, USD per million tokens, typed in by hand for the tests
 * apart from the gateway's catalog, so a test that checks a cost compares two computations.
 * Read 2026-11-25: https://platform.claude.com/docs/en/about-claude/pricing (Opus 4.5, Sonnet 4.5
 * and 4.6, Haiku 4.5) and https://platform.claude.com/docs/en/models/opus-5-5/overview (Opus 5.5).
 * Standard speed, global inference, no batch, prompts under every tier boundary.
 */
export interface HandRates {
  in: number;
  w5: number;
  w1: number;
  read: number;
  out: number;
}

const PUBLISHED: Record<string, HandRates> = {
  'claude-opus-5-5': { in: 4, w5: 5, w1: 8, read: 0.2, out: 20 },
  'claude-opus-4-5': { in: 5, w5: 6.25, w1: 10, read: 0.5, out: 25 },
  'claude-sonnet-4-6': { in: 3, w5: 3.75, w1: 6, read: 0.3, out: 15 },
  'claude-sonnet-4-5': { in: 3, w5: 3.75, w1: 6, read: 0.3, out: 15 },
  'claude-haiku-4-5': { in: 1, w5: 1.25, w1: 2, read: 0.1, out: 5 },
};
/** Web search: $10 per 1,000 searches, a cent each. */
const SEARCH_CENTS = 1;

/** Token counts under the call log's column names. */
export interface CountedRow {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_5m_tokens: number;
  cache_creation_1h_tokens: number;
  web_search_requests: number;
}

/** Cents of one call at the published price; an unknown model fails the test that asks. */
export function handCents(model: string | null, row: CountedRow): number {
  const r = model ? PUBLISHED[model] : undefined;
  if (!r) throw new Error(`no published rate typed in for ${model}: add it from the pricing page`);
  const usd =
    (row.input_tokens * r.in +
      row.cache_creation_5m_tokens * r.w5 +
      row.cache_creation_1h_tokens * r.w1 +
      row.cache_read_input_tokens * r.read +
      row.output_tokens * r.out) /
    1e6;
  return usd * 100 + row.web_search_requests * SEARCH_CENTS;
}

/** The provider's own usage object (as the emulator recorded and sent it), priced by hand. */
export interface ProviderUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_creation?: { ephemeral_5m_input_tokens?: number; ephemeral_1h_input_tokens?: number } | null;
  server_tool_use?: { web_search_requests?: number } | null;
}

export function handCentsOfUsage(model: string, u: ProviderUsage): number {
  // Without the split, every cache write is a 5-minute one (the provider's default TTL).
  const w1 = u.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  const w5 = u.cache_creation?.ephemeral_5m_input_tokens ?? (u.cache_creation_input_tokens ?? 0) - w1;
  return handCents(model, {
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
    cache_read_input_tokens: u.cache_read_input_tokens ?? 0,
    cache_creation_5m_tokens: w5,
    cache_creation_1h_tokens: w1,
    web_search_requests: u.server_tool_use?.web_search_requests ?? 0,
  });
}
