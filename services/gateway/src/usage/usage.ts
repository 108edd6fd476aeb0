import { cacheWrites, type ProviderUsage } from '@keygate/protocol';

export type { ProviderUsage };

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
  /** usage.speed ('fast' | 'standard'), usage.inference_geo: they change the price. */
  speed: string | null;
  inferenceGeo: string | null;
  /** Billed through the Message Batches API (the record's `batch` flag, not a usage field). */
  batch: boolean;
}

const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

export function usageFigures(u: ProviderUsage | null, batch = false): UsageFigures {
  const writes = cacheWrites(u);
  return {
    inputTokens: n(u?.input_tokens),
    outputTokens: n(u?.output_tokens),
    cacheCreationInputTokens: writes.total,
    cacheCreation5mTokens: writes.fiveMinute,
    cacheCreation1hTokens: writes.oneHour,
    cacheReadInputTokens: n(u?.cache_read_input_tokens),
    webSearchRequests: n(u?.server_tool_use?.web_search_requests),
    serviceTier: typeof u?.service_tier === 'string' ? u.service_tier : null,
    speed: typeof u?.speed === 'string' ? u.speed : null,
    inferenceGeo: typeof u?.inference_geo === 'string' ? u.inference_geo : null,
    batch,
  };
}

/** Prompt sizes the rollups keep calls apart by: every tier bound in the catalog is one of these. */
export const PROMPT_BANDS = [100_000, 200_000] as const;

/** The largest band a prompt exceeds (0 when none): what the rollups store. */
export function promptBand(tokens: number): number {
  let band = 0;
  for (const b of PROMPT_BANDS) if (tokens > b) band = b;
  return band;
}
