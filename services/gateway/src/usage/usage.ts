/** Usage as the provider reports it; unknown fields are kept as they came. */
export interface ProviderUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation?: { ephemeral_5m_input_tokens?: number | null; ephemeral_1h_input_tokens?: number | null; [k: string]: unknown } | null;
  server_tool_use?: { web_search_requests?: number | null; web_fetch_requests?: number | null; [k: string]: unknown } | null;
  service_tier?: string | null;
  [k: string]: unknown;
}

/** The flat figures a call record keeps. */
export interface UsageFigures {
  inputTokens: number;
  outputTokens: number;
  cacheCreationInputTokens: number;
  cacheCreation5mTokens: number;
  cacheCreation1hTokens: number;
  cacheReadInputTokens: number;
  webSearchRequests: number;
  serviceTier: string | null;
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

const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

export function usageFigures(u: ProviderUsage | null): UsageFigures {
  const creation = n(u?.cache_creation_input_tokens);
  const c1h = n(u?.cache_creation?.ephemeral_1h_input_tokens);
  // Without the breakdown, creation is all 5-minute cache (the provider's default TTL).
  const c5m = u?.cache_creation?.ephemeral_5m_input_tokens != null ? n(u.cache_creation.ephemeral_5m_input_tokens) : creation - c1h;
  return {
    inputTokens: n(u?.input_tokens),
    outputTokens: n(u?.output_tokens),
    cacheCreationInputTokens: creation,
    cacheCreation5mTokens: c5m,
    cacheCreation1hTokens: c1h,
    cacheReadInputTokens: n(u?.cache_read_input_tokens),
    webSearchRequests: n(u?.server_tool_use?.web_search_requests),
    serviceTier: typeof u?.service_tier === 'string' ? u.service_tier : null,
  };
}
