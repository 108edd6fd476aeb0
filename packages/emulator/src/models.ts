import data from './data/models.json' with { type: 'json' };
import { EmulatorError, invalid } from './errors';

export interface ModelInfo {
  type: 'model';
  id: string;
  display_name: string;
  created_at: string;
}

/** One model of the emulator's own list (data/models.json), with its list price. */
export interface ModelData {
  id: string;
  display_name: string;
  created_at: string;
  aliases: string[];
  inference_geo: boolean;
  fast: { supported: boolean; x: number | null; over_200k?: { in: number; out: number } } | null;
  price: PriceData | null;
  over_100k_prompt?: PriceData;
  price_changes?: ({ from: string } & Partial<PriceData>)[];
}

/** USD per million tokens. */
export interface PriceData {
  in: number;
  out: number;
  w5m: number;
  w1h: number;
  read: number;
}

export const MODEL_DATA: readonly ModelData[] = (data as { models: ModelData[] }).models;

/** Newest first, as the provider lists them. */
export const MODELS: readonly ModelInfo[] = MODEL_DATA.map((m) => model(m.id, m.display_name, m.created_at));

/** Aliases `GET /v1/models/{id}` and the Messages API resolve, like the provider's. */
export const MODEL_ALIASES: Readonly<Record<string, string>> = Object.fromEntries(
  MODEL_DATA.flatMap((m) => m.aliases.map((a) => [a, m.id])),
);

/** The model an id (or alias) names; null when the provider would answer 404. */
export function modelData(id: string): ModelData | null {
  const resolved = MODEL_ALIASES[id] ?? id;
  return MODEL_DATA.find((m) => m.id === resolved) ?? null;
}

/** The provider's answer to a Messages call on a model it does not serve. */
export function unknownModel(id: string): EmulatorError {
  return new EmulatorError('not_found_error', `model: ${id}`);
}

export interface ModelPage {
  data: ModelInfo[];
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

/** `GET /v1/models?limit&after_id&before_id`: cursor pagination over MODELS. */
export function listModels(query: URLSearchParams): ModelPage {
  const rawLimit = query.get('limit');
  const limit = rawLimit === null ? 20 : Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw invalid('limit: Input should be an integer between 1 and 1000');
  }
  const after = query.get('after_id');
  const before = query.get('before_id');
  if (after !== null && before !== null) throw invalid('Only one of after_id and before_id may be provided.');
  let data: ModelInfo[];
  let hasMore: boolean;
  if (before !== null) {
    const end = indexOf(before, 'before_id');
    const start = Math.max(0, end - limit);
    data = MODELS.slice(start, end);
    hasMore = start > 0;
  } else {
    const start = after === null ? 0 : indexOf(after, 'after_id') + 1;
    data = MODELS.slice(start, start + limit);
    hasMore = start + limit < MODELS.length;
  }
  return {
    data,
    has_more: hasMore,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
  };
}

/** `GET /v1/models/{id}`, aliases included; 404 like the provider for anything else. */
export function getModel(id: string): ModelInfo {
  const resolved = MODEL_ALIASES[id] ?? id;
  const found = MODELS.find((m) => m.id === resolved);
  if (!found) throw new EmulatorError('not_found_error', `model: ${id}`);
  return found;
}

function indexOf(id: string, field: string): number {
  const i = MODELS.findIndex((m) => m.id === id);
  if (i === -1) throw invalid(`${field}: no model with id '${id}'`);
  return i;
}

function model(id: string, displayName: string, date: string): ModelInfo {
  return { type: 'model', id, display_name: displayName, created_at: `${date}T00:00:00Z` };
}
