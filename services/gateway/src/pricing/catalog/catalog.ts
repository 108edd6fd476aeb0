import bundled from './price-catalog.json' with { type: 'json' };

/** USD per million tokens for each token category the provider bills. */
export interface Rates {
  input: number;
  cache_write_5m: number;
  cache_write_1h: number;
  cache_read: number;
  output: number;
}

/** A call whose prompt (input + cache reads + cache writes) exceeds the bound pays these rates. */
export interface PromptTier extends Rates {
  above_prompt_tokens: number;
}

export interface FastMode {
  multiplier: number;
  /** Above this prompt size fast mode multiplies input and output differently. */
  long_prompt?: { above_prompt_tokens: number; input_multiplier: number; output_multiplier: number };
  source?: string;
  read_on?: string;
  note?: string;
}

/** One price of a model, in force from `effective_from` (null: since the model exists) until the next. */
export interface PriceRow extends Rates {
  effective_from: string | null;
  prompt_tiers?: PromptTier[];
  fast?: FastMode;
  source: string;
  read_on: string;
  note?: string;
  /** Set on rows an operator added: who set them is in the audit log. */
  origin?: 'catalog' | 'operator';
}

export interface ModelEntry {
  id: string;
  display_name: string;
  family: string;
  aliases: string[];
  /** Whether the data-residency multipliers apply (Opus 4.6 and later models). */
  inference_geo_pricing: boolean;
  prices: PriceRow[];
}

export interface CatalogData {
  version: string;
  batch: { multiplier: number; source: string; read_on: string };
  inference_geo: { multipliers: Record<string, number>; source: string; read_on: string };
  server_tools: { web_search: { usd_per_1000: number; source: string; read_on: string } };
  models: ModelEntry[];
}

/** What the catalog knows of a model at one instant: the row in force and the model-wide rules. */
export interface PriceInForce {
  model: ModelEntry;
  row: PriceRow;
}

const time = (d: string | null) => (d === null ? Number.NEGATIVE_INFINITY : Date.parse(`${d}T00:00:00Z`));

/**
 * The price catalog: the bundled list prices plus operator rows, looked up by exact model id or
 * alias (a dated snapshot is an alias). No prefix matching: a new model with no entry is
 * unpriced, never silently priced as its predecessor.
 */
export class PriceCatalog {
  readonly data: CatalogData;
  private readonly byId = new Map<string, ModelEntry>();

  constructor(data: CatalogData) {
    this.data = { ...data, models: data.models.map((m) => ({ ...m, prices: sortRows(m.prices) })) };
    for (const m of this.data.models) this.index(m);
  }

  private index(m: ModelEntry): void {
    this.byId.set(m.id, m);
    for (const a of m.aliases) this.byId.set(a, m);
  }

  entry(model: string | null): ModelEntry | null {
    return model === null ? null : (this.byId.get(model) ?? null);
  }

  /** The price in force for `model` at `at`, or null when the catalog has none (unpriced). */
  lookup(model: string | null, at: Date): PriceInForce | null {
    const m = this.entry(model);
    if (!m) return null;
    const t = at.getTime();
    let row: PriceRow | null = null;
    for (const r of m.prices) if (time(r.effective_from) <= t) row = r;
    return row ? { model: m, row } : null;
  }

  /**
   * Adds a row (an operator's price, or a whole new model). A row with the same effective date
   * replaces the one there; a model the catalog does not know is created with the given family.
   */
  withRow(
    model: string,
    row: PriceRow,
    meta: {
      display_name?: string;
      family?: string;
      aliases?: string[];
      inference_geo_pricing?: boolean;
    } = {},
  ): PriceCatalog {
    const existing = this.entry(model);
    const base: ModelEntry = existing ?? {
      id: model,
      display_name: meta.display_name ?? model,
      family: meta.family ?? familyOf(model),
      aliases: meta.aliases ?? [],
      inference_geo_pricing: meta.inference_geo_pricing ?? false,
      prices: [],
    };
    const prices = [...base.prices.filter((r) => r.effective_from !== row.effective_from), row];
    const updated: ModelEntry = { ...base, prices };
    const models = existing
      ? this.data.models.map((m) => (m === existing ? updated : m))
      : [...this.data.models, updated];
    return new PriceCatalog({ ...this.data, models });
  }

  /** The highest rates any priced model of a family has had: the fail-safe for its unpriced models. */
  familyCeiling(family: string): Rates {
    const rows = this.data.models.filter((m) => m.family === family).flatMap((m) => m.prices);
    const pool = rows.length > 0 ? rows : this.data.models.flatMap((m) => m.prices);
    const max = (k: keyof Rates) => Math.max(0, ...pool.map((r) => r[k]));
    return {
      input: max('input'),
      cache_write_5m: max('cache_write_5m'),
      cache_write_1h: max('cache_write_1h'),
      cache_read: max('cache_read'),
      output: max('output'),
    };
  }

  get webSearchUsdPer1000(): number {
    return this.data.server_tools.web_search.usd_per_1000;
  }

  get batchMultiplier(): number {
    return this.data.batch.multiplier;
  }

  geoMultiplier(model: ModelEntry, geo: string | null): number {
    if (!geo || !model.inference_geo_pricing) return 1;
    return this.data.inference_geo.multipliers[geo] ?? 1;
  }
}

function sortRows(rows: PriceRow[]): PriceRow[] {
  return [...rows].sort((a, b) => time(a.effective_from) - time(b.effective_from));
}

/** The family a model id names (claude-opus-6 → opus); "unknown" when it names none. */
export function familyOf(model: string): string {
  const m = /^claude-(?:\d+-(?:\d+-)?)?([a-z]+)/.exec(model);
  return m?.[1] ?? 'unknown';
}

export const BUNDLED_CATALOG = new PriceCatalog(bundled as unknown as CatalogData);
