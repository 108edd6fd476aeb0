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
