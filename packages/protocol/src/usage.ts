/** Usage as the provider reports it; unknown fields are kept as they came. */
export interface ProviderUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation?: {
    ephemeral_5m_input_tokens?: number | null;
    ephemeral_1h_input_tokens?: number | null;
    [k: string]: unknown;
  } | null;
  server_tool_use?: {
    web_search_requests?: number | null;
    web_fetch_requests?: number | null;
    [k: string]: unknown;
  } | null;
  service_tier?: string | null;
  [k: string]: unknown;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Applies a later usage object onto an earlier one the way the provider defines a stream's
 * final usage: each field present in `next` replaces the earlier value (nested objects field
 * by field). Values are running totals, so nothing is ever added.
 */
export function overlayUsage(base: ProviderUsage, next: ProviderUsage): ProviderUsage {
  const out: ProviderUsage = { ...base };
  for (const [field, value] of Object.entries(next)) {
    if (value === null || value === undefined) continue;
    const prev = out[field];
    out[field] = isPlainObject(value) && isPlainObject(prev) ? overlayUsage(prev, value) : value;
  }
  return out;
}

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);

/** Cache writes by lifetime; `fiveMinute + oneHour === total` always. */
export interface CacheWrites {
  total: number;
  fiveMinute: number;
  oneHour: number;
}

/**
 * The one reading of a usage object's cache writes, for the gateway, the SDK and the tests.
 *
 * The provider's API reference (platform.claude.com/docs/en/api/messages, Usage; its OpenAPI
 * schema, read 2026-11-29): `cache_creation_input_tokens` is "the number of input tokens used to
 * create the cache entry" (integer or null); `cache_creation` is the "breakdown of cached tokens
 * by TTL", an object or null, whose `ephemeral_5m_input_tokens` and `ephemeral_1h_input_tokens`
 * are integers, minimum 0, default 0. The default cache lifetime is 5 minutes.
 *
 * So: the total is `cache_creation_input_tokens` (when it is absent, the sum of the breakdown);
 * without a breakdown every write is a 5-minute write; with one, a missing part is 0, the 1-hour
 * part is taken as given (never above the total) and the rest of the total is 5-minute writes, so
 * the parts always add up to the total and no reported write goes unpriced.
 */
export function cacheWrites(usage: Readonly<Record<string, unknown>> | null | undefined): CacheWrites {
  const split = usage?.cache_creation;
  const breakdown =
    typeof split === 'object' && split !== null && !Array.isArray(split)
      ? (split as Record<string, unknown>)
      : null;
  const reported = usage?.cache_creation_input_tokens;
  const total =
    typeof reported === 'number' && Number.isFinite(reported)
      ? count(reported)
      : count(breakdown?.ephemeral_5m_input_tokens) + count(breakdown?.ephemeral_1h_input_tokens);
  const oneHour = Math.min(count(breakdown?.ephemeral_1h_input_tokens), total);
  return { total, fiveMinute: total - oneHour, oneHour };
}
