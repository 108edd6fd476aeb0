import { BUNDLED_CATALOG } from '../src/pricing/catalog/catalog';
import type { Figures } from '../src/dashboard/data';
import type { CallRecord } from '../src/lib/call-record';

export type { Figures };

/**
 * The independent side of the exactness test: figures summed straight from the call records
 * in JavaScript, local days from Intl, with none of the gateway's report code.
 */

const zero = (): Figures => ({
  uncached_input_tokens: 0,
  cache_creation: { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: 0 },
  cache_read_input_tokens: 0,
  output_tokens: 0,
  server_tool_use: { web_search_requests: 0 },
  requests: 0,
  errors: 0,
});

/** A record's counts; a cache write without the 5m/1h breakdown is all 5-minute cache (the provider's default). */
export function counts(r: CallRecord) {
  const u = (r.usage ?? {}) as Record<string, any>;
  const c1h = u.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  const c5m = u.cache_creation
    ? u.cache_creation.ephemeral_5m_input_tokens
    : (u.cache_creation_input_tokens ?? 0) - c1h;
  return {
    input: u.input_tokens ?? 0,
    output: u.output_tokens ?? 0,
    c5m,
    c1h,
    read: u.cache_read_input_tokens ?? 0,
    searches: u.server_tool_use?.web_search_requests ?? 0,
    error: r.status >= 400 || r.errorType !== null,
  };
}

function add(f: Figures, r: CallRecord): void {
  const c = counts(r);
  f.uncached_input_tokens += c.input;
  f.cache_creation.ephemeral_1h_input_tokens += c.c1h;
  f.cache_creation.ephemeral_5m_input_tokens += c.c5m;
  f.cache_read_input_tokens += c.read;
  f.output_tokens += c.output;
  f.server_tool_use.web_search_requests += c.searches;
  f.requests += 1;
  if (c.error) f.errors += 1;
}

/** Sums the records under the key each one maps to (null: left out). */
export function aggregate(
  records: CallRecord[],
  keyOf: (r: CallRecord) => string | null,
): Map<string, Figures> {
  const out = new Map<string, Figures>();
  for (const r of records) {
    const k = keyOf(r);
    if (k === null) continue;
    if (!out.has(k)) out.set(k, zero());
    add(out.get(k)!, r);
  }
  return out;
}

const dayFormats = new Map<string, Intl.DateTimeFormat>();
/** The local date of an instant in a zone, `YYYY-MM-DD`. */
export function localDay(zone: string, t: number): string {
  if (!dayFormats.has(zone))
    dayFormats.set(
      zone,
      new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }),
    );
  return dayFormats.get(zone)!.format(new Date(t));
}

/** The record field behind each report dimension. */
export const FIELD = {
  api_key_id: (r: CallRecord) => r.keyId,
  user_id: (r: CallRecord) => r.memberId,
  model: (r: CallRecord) => r.model,
  group_id: (r: CallRecord) => r.groupId,
  app: (r: CallRecord) => r.app,
  environment: (r: CallRecord) => r.environment,
} as const;
export type Dim = keyof typeof FIELD;

/** A record's bucket: its local day (1d) or its UTC hour or minute, as an ISO instant of the bucket start (days: the date). */
export function bucketOf(width: '1d' | '1h' | '1m', zone: string, t: number): string {
  if (width === '1d') return localDay(zone, t);
  const ms = width === '1h' ? 3_600_000 : 60_000;
  return new Date(Math.floor(t / ms) * ms).toISOString();
}

const RATES = {
  input: 'input',
  output: 'output',
  read: 'cache_read',
  c5m: 'cache_write_5m',
  c1h: 'cache_write_1h',
} as const;
const TOKEN_TYPE = {
  input: 'uncached_input_tokens',
  output: 'output_tokens',
  read: 'cache_read_input_tokens',
  c5m: 'cache_creation.ephemeral_5m_input_tokens',
  c1h: 'cache_creation.ephemeral_1h_input_tokens',
} as const;

/** Cost items of a record in cents, per token type (and web search), from the price table's per-million rates. */
export function costItems(r: CallRecord): { tokenType: string | null; costType: string; cents: number }[] {
  const c = counts(r);
  // Refused calls carry no model and no tokens: nothing to price.
  const found = BUNDLED_CATALOG.lookup(r.model, r.createdAt);
  if (!found) return [];
  const price = found.row as unknown as Record<string, number>;
  const out = (Object.keys(RATES) as (keyof typeof RATES)[])
    .filter((k) => c[k] > 0)
    .map((k) => ({
      tokenType: TOKEN_TYPE[k] as string | null,
      costType: 'tokens',
      cents: (c[k] * price[RATES[k]]!) / 10_000,
    }));
  if (c.searches > 0) out.push({ tokenType: null, costType: 'web_search', cents: c.searches }); // one cent per search: $10 per 1,000
  return out;
}
