import { MODEL_PRICES, priceFor, type ModelPrice } from '../pricing/prices';

/** What a call's ceiling is computed from: known once its body is validated. */
export interface CallSize {
  model: string;
  /** The request body's length: no text tokenizes to more tokens than it has bytes. */
  inputBytes: number;
  /** Pages of the PDFs in the body (each is also sent to the model as an image). */
  pdfPages: number;
  maxTokens: number;
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
export function ceilingMicroUsd(s: CallSize): number {
  const rates = ceilingRates(s.model);
  const input = s.inputBytes + s.pdfPages * PDF_PAGE_TOKENS + PROMPT_TOKENS;
  // USD per million tokens is micro-USD per token.
  return Math.ceil(input * rates.input + s.maxTokens * rates.output);
}

const FAMILY = /(opus|sonnet|haiku)/;
const DEAREST = (prices: readonly ModelPrice[]) => ({
  input: Math.max(...prices.map((p) => Math.max(p.input, p.cacheWrite5m, p.cacheWrite1h))),
  output: Math.max(...prices.map((p) => p.output)),
});
const BY_FAMILY = new Map(
  ['opus', 'sonnet', 'haiku'].map((f) => [f, DEAREST(MODEL_PRICES.filter((p) => p.prefix.includes(f)))]),
);
const ALL = DEAREST(MODEL_PRICES);

/**
 * The one place the ceiling takes a price from (`priceFor`, the price lookup; swap it here).
 * A model without a price of its own is reserved at the highest rates of its family (opus,
 * sonnet, haiku), or of every model when no family matches: a cap then stops too early,
 * never too late. The reservation is never below what the call will be charged at.
 */
export function ceilingRates(model: string): { input: number; output: number } {
  const price = priceFor(model);
  const own = { input: Math.max(price.input, price.cacheWrite5m, price.cacheWrite1h), output: price.output };
  if (price.prefix !== '') return own;
  const family = BY_FAMILY.get(FAMILY.exec(model)?.[1] ?? '') ?? ALL;
  return { input: Math.max(own.input, family.input), output: Math.max(own.output, family.output) };
}
