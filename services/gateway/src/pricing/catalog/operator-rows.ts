import { z } from 'zod';
import type { PriceRowRecord } from '../price-queries';
import { PROMPT_BANDS } from '../prices';
import { BUNDLED_CATALOG, type PriceCatalog, type PriceRow } from './catalog';

const rate = z.number().min(0).max(100_000);
const rates = {
  input: rate,
  cache_write_5m: rate,
  cache_write_1h: rate,
  cache_read: rate,
  output: rate,
};
const band = z
  .number()
  .int()
  .refine((n) => (PROMPT_BANDS as readonly number[]).includes(n), {
    message: `above_prompt_tokens must be one of ${PROMPT_BANDS.join(', ')} (the prompt sizes the rollups keep apart)`,
  });

/** One operator price, USD per million tokens, in force from `effective_from` (omitted: always). */
export const OperatorPrice = z.strictObject({
  model: z.string().trim().min(1).max(200),
  effective_from: z.iso.date().nullable().default(null),
  display_name: z.string().trim().min(1).max(200).optional(),
  family: z
    .string()
    .regex(/^[a-z]+$/)
    .optional(),
  aliases: z.array(z.string().trim().min(1).max(200)).max(20).optional(),
  ...rates,
  prompt_tiers: z
    .array(z.strictObject({ above_prompt_tokens: band, ...rates }))
    .max(PROMPT_BANDS.length)
    .optional(),
  fast_multiplier: z.number().min(0).max(1000).optional(),
  source: z.string().trim().min(1).max(500).default('operator'),
});
export type OperatorPrice = z.infer<typeof OperatorPrice>;

/** An entry of LiteLLM's model_prices_and_context_window.json (USD per token); other fields are ignored. */
const LiteLlmEntry = z.looseObject({
  litellm_provider: z.string().optional(),
  input_cost_per_token: z.number().min(0).optional(),
  output_cost_per_token: z.number().min(0).optional(),
  cache_creation_input_token_cost: z.number().min(0).optional(),
  cache_creation_input_token_cost_above_1hr: z.number().min(0).optional(),
  cache_read_input_token_cost: z.number().min(0).optional(),
  input_cost_per_token_above_200k_tokens: z.number().min(0).optional(),
  output_cost_per_token_above_200k_tokens: z.number().min(0).optional(),
  cache_creation_input_token_cost_above_200k_tokens: z.number().min(0).optional(),
  cache_read_input_token_cost_above_200k_tokens: z.number().min(0).optional(),
});

const perM = (v: number) => Math.round(v * 1e6 * 1e9) / 1e9;

/**
 * The Anthropic entries of a LiteLLM price file as operator prices: `anthropic/` prefixes and
 * other providers' entries (Bedrock, Vertex ids) are dropped, as the gateway only sees the
 * provider's own ids. An entry without input and output prices is skipped, never guessed.
 */
export function fromLiteLlm(file: unknown, effectiveFrom: string | null, source: string): OperatorPrice[] {
  if (typeof file !== 'object' || file === null || Array.isArray(file))
    throw new Error('a LiteLLM price file is a JSON object keyed by model name');
  const out: OperatorPrice[] = [];
  for (const [name, raw] of Object.entries(file)) {
    const parsed = LiteLlmEntry.safeParse(raw);
    if (!parsed.success) continue;
    const e = parsed.data;
    const model = name.replace(/^anthropic\//, '');
    if (e.litellm_provider !== 'anthropic' || !model.startsWith('claude-')) continue;
    if (e.input_cost_per_token === undefined || e.output_cost_per_token === undefined) continue;
    const input = perM(e.input_cost_per_token);
    const row: OperatorPrice = {
      model,
      effective_from: effectiveFrom,
      input,
      output: perM(e.output_cost_per_token),
      cache_write_5m: perM(e.cache_creation_input_token_cost ?? e.input_cost_per_token * 1.25),
      cache_write_1h: perM(e.cache_creation_input_token_cost_above_1hr ?? e.input_cost_per_token * 2),
      cache_read: perM(e.cache_read_input_token_cost ?? e.input_cost_per_token * 0.1),
      source,
    };
    if (
      e.input_cost_per_token_above_200k_tokens !== undefined &&
      e.output_cost_per_token_above_200k_tokens !== undefined
    )
      row.prompt_tiers = [
        {
          above_prompt_tokens: 200_000,
          input: perM(e.input_cost_per_token_above_200k_tokens),
          output: perM(e.output_cost_per_token_above_200k_tokens),
          cache_write_5m: perM(
            e.cache_creation_input_token_cost_above_200k_tokens ??
              e.input_cost_per_token_above_200k_tokens * 1.25,
          ),
          cache_write_1h: perM(e.input_cost_per_token_above_200k_tokens * 2),
          cache_read: perM(
            e.cache_read_input_token_cost_above_200k_tokens ?? e.input_cost_per_token_above_200k_tokens * 0.1,
          ),
        },
      ];
    out.push(row);
  }
  return out;
}

/** Reads a price file: an array of operator prices, or a LiteLLM price file. */
export function parsePriceFile(json: unknown, source: string): OperatorPrice[] {
  if (Array.isArray(json)) return z.array(OperatorPrice).parse(json);
  return fromLiteLlm(json, null, source);
}

export function toRecord(p: OperatorPrice, createdBy: string): Omit<PriceRowRecord, 'createdAt'> {
  const { model, effective_from, display_name, family, aliases, source, ...rates } = p;
  return {
    model,
    effectiveFrom: effective_from,
    family: family ?? null,
    displayName: display_name ?? null,
    aliases: aliases ?? [],
    rates,
    source,
    createdBy,
  };
}

function apply(catalog: PriceCatalog, p: OperatorPrice, readOn: string): PriceCatalog {
  const row: PriceRow = {
    effective_from: p.effective_from,
    input: p.input,
    cache_write_5m: p.cache_write_5m,
    cache_write_1h: p.cache_write_1h,
    cache_read: p.cache_read,
    output: p.output,
    ...(p.prompt_tiers ? { prompt_tiers: p.prompt_tiers } : {}),
    ...(p.fast_multiplier !== undefined ? { fast: { multiplier: p.fast_multiplier } } : {}),
    source: p.source,
    read_on: readOn,
    origin: 'operator',
  };
  return catalog.withRow(p.model, row, {
    display_name: p.display_name,
    family: p.family,
    aliases: p.aliases,
  });
}

/** The bundled catalog with a price file's rows, then the operator API's rows (newest word wins). */
export function buildCatalog(fileRows: OperatorPrice[], stored: PriceRowRecord[]): PriceCatalog {
  let catalog = BUNDLED_CATALOG;
  for (const p of fileRows) catalog = apply(catalog, p, 'price file');
  for (const r of stored) {
    const p = OperatorPrice.parse({
      model: r.model,
      effective_from: r.effectiveFrom,
      ...(r.displayName ? { display_name: r.displayName } : {}),
      ...(r.family ? { family: r.family } : {}),
      aliases: r.aliases,
      ...r.rates,
      source: r.source,
    });
    catalog = apply(catalog, p, r.createdAt.toISOString().slice(0, 10));
  }
  return catalog;
}
