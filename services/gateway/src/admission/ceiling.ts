import { familyOf, type PriceCatalog, type Rates } from '../pricing/catalog/catalog';
import type { Estimate } from './estimate';

/** What a call's ceiling is computed from: known once its body is validated. */
export interface CallSize {
  model: string;
  /** The request body's length: no text tokenizes to more tokens than it has bytes. */
  inputBytes: number;
  /** Pages of the PDFs in the body (each is also sent to the model as an image). */
  pdfPages: number;
  maxTokens: number;
  /** The dearest cache write the body asks for; absent: priced as the dearest there is (1 hour). */
  cacheWrite?: '5m' | '1h' | null;
}

// "Each page typically uses 1,500-3,000 tokens" (text plus the page as an image), on top of
// the document's bytes: https://docs.claude.com/en/docs/build-with-claude/pdf-support
// (read 2026-11-25).
const PDF_PAGE_TOKENS = 3_000;
// The system prompt the provider adds for tools (at most a few hundred tokens per model:
// https://docs.claude.com/en/docs/agents-and-tools/tool-use/overview#pricing, read
// 2026-11-25), with room to spare for small bodies.
const PROMPT_TOKENS = 1_000;

/**
 * The most tokens a call can count against a tokens-per-minute limit: every input byte as a
 * token, each PDF page at its most, the tools' system prompt, and all of `max_tokens`.
 * Server tools (web search, web fetch) add input the body does not show; they are outside
 * this bound, and their calls settle at what they really used.
 */
export function ceilingTokens(s: CallSize): number {
  return s.inputBytes + s.pdfPages * PDF_PAGE_TOKENS + PROMPT_TOKENS + s.maxTokens;
}

/** The most a call can cost, in micro-USD: its ceiling tokens, input at the dearest input rate (a 1-hour cache write). */
export function ceilingMicroUsd(s: CallSize, catalog: PriceCatalog): number {
  const rates = ceilingRates(catalog, s.model);
  const input = s.inputBytes + s.pdfPages * PDF_PAGE_TOKENS + PROMPT_TOKENS;
  // USD per million tokens is micro-USD per token.
  return Math.ceil(input * rates.input + s.maxTokens * rates.output);
}

/**
 * What a call is expected to cost, in micro-USD: its estimated uncached input at the rate of the
 * cache write its body asks for (plain input without `cache_control`, the 5-minute or the 1-hour
 * write rate with it, whichever is dearer than plain input), its expected cache reads at the
 * cache-read rate, and its expected output. A budget or spend limit holds this while the call
 * runs, unless it asks for the ceiling; the call settles at its real cost.
 */
export function expectedMicroUsd(
  catalog: PriceCatalog,
  model: string,
  e: Estimate,
  cacheWrite: CallSize['cacheWrite'] = '1h',
): number {
  const rates = ceilingRates(catalog, model);
  const input = cacheWrite === null ? rates.plainInput : cacheWrite === '5m' ? rates.write5m : rates.input;
  return Math.ceil(e.inputTokens * input + e.cachedTokens * rates.cacheRead + e.outputTokens * rates.output);
}

/**
 * The most a message batch can cost, in micro-USD: each request's ceiling (its input and
 * `max_tokens`, as a single call's) at the batch price, the catalog's batch multiplier (50% of
 * input and output: https://docs.claude.com/en/docs/build-with-claude/batch-processing,
 * read 2026-11-25).
 */
export function batchCeilingMicroUsd(requests: readonly CallSize[], catalog: PriceCatalog): number {
  let micro = 0;
  for (const size of requests) micro += ceilingMicroUsd(size, catalog);
  return Math.ceil(micro * catalog.batchMultiplier);
}

/**
 * The one place the ceiling takes a price from: the gateway's price catalog in force now (pricing/).
 * The dearest input rate of the model's row and its prompt tiers (a 1-hour cache write is the
 * dearest input), and the dearest output rate, times the highest data-residency multiplier the
 * model can be billed at. Fast mode is opt-in per call and left out (a fast call settles at its
 * real cost). A model without a price is reserved at the highest rates its family has had
 * (pricing's fail-safe rule): a cap then stops too early, never too late.
 */
export function ceilingRates(
  catalog: PriceCatalog,
  model: string,
  at: Date = new Date(),
): { input: number; plainInput: number; write5m: number; cacheRead: number; output: number } {
  const found = catalog.lookup(model, at);
  const rows: Rates[] = found
    ? [found.row, ...(found.row.prompt_tiers ?? [])]
    : [catalog.familyCeiling(familyOf(model))];
  const geo = found?.model.inference_geo_pricing
    ? Math.max(1, ...Object.values(catalog.data.inference_geo.multipliers))
    : 1;
  return {
    input: geo * Math.max(...rows.map((r) => Math.max(r.input, r.cache_write_5m, r.cache_write_1h))),
    plainInput: geo * Math.max(...rows.map((r) => r.input)),
    write5m: geo * Math.max(...rows.map((r) => Math.max(r.input, r.cache_write_5m))),
    cacheRead: geo * Math.max(...rows.map((r) => r.cache_read)),
    output: geo * Math.max(...rows.map((r) => r.output)),
  };
}
