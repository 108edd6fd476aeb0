import data from './data/models.json' with { type: 'json' };
import { modelData, type PriceData } from './models';
import type { Usage } from './types';

const catalog = data as { batch: number; us_geo: number; web_search_per_1000: number };

/**
 * What the provider bills for one call, in USD cents, from the emulator's own list prices
 * (data/models.json): the oracle a gateway's cost is compared with. Null when the stored docs
 * gave no price for the model (or its fast mode).
 */
export function listPriceCents(
  model: string,
  usage: Usage,
  at: Date,
  opts: { batch?: boolean } = {},
): number | null {
  const m = modelData(model);
  if (!m?.price) return null;
  const day = at.toISOString().slice(0, 10);
  let p: PriceData = m.price;
  for (const change of m.price_changes ?? []) if (change.from <= day) p = { ...p, ...change };
  const writes =
    usage.cache_creation.ephemeral_5m_input_tokens + usage.cache_creation.ephemeral_1h_input_tokens;
  const prompt = usage.input_tokens + usage.cache_read_input_tokens + writes;
  if (m.over_100k_prompt && prompt > 100_000) p = m.over_100k_prompt;
  let inX = 1;
  let outX = 1;
  if (usage.speed === 'fast') {
    if (!m.fast?.x) return null;
    const long = m.fast.over_200k && prompt > 200_000 ? m.fast.over_200k : null;
    inX = long ? long.in : m.fast.x;
    outX = long ? long.out : m.fast.x;
  }
  const x = (opts.batch ? catalog.batch : 1) * (usage.inference_geo === 'us' ? catalog.us_geo : 1);
  const usd =
    (usage.input_tokens * p.in * inX +
      usage.cache_creation.ephemeral_5m_input_tokens * p.w5m * inX +
      usage.cache_creation.ephemeral_1h_input_tokens * p.w1h * inX +
      usage.cache_read_input_tokens * p.read * inX +
      usage.output_tokens * p.out * outX) *
      (x / 1_000_000) +
    (usage.server_tool_use.web_search_requests * catalog.web_search_per_1000) / 1000;
  return usd * 100;
}
