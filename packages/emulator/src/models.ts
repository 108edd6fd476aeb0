import { EmulatorError, invalid } from './errors';

export interface ModelInfo {
  type: 'model';
  id: string;
  display_name: string;
  created_at: string;
}

/** Newest first, as the provider lists them. */
export const MODELS: readonly ModelInfo[] = [
  model('claude-opus-4-5-20251101', 'Claude Opus 4.5', '2025-11-24'),
  model('claude-haiku-4-5-20251001', 'Claude Haiku 4.5', '2025-10-15'),
  model('claude-sonnet-4-5-20250929', 'Claude Sonnet 4.5', '2025-09-29'),
  model('claude-opus-4-1-20250805', 'Claude Opus 4.1', '2025-08-05'),
  model('claude-opus-4-20250514', 'Claude Opus 4', '2025-05-22'),
  model('claude-sonnet-4-20250514', 'Claude Sonnet 4', '2025-05-22'),
  model('claude-3-7-sonnet-20250219', 'Claude Sonnet 3.7', '2025-02-24'),
  model('claude-3-5-haiku-20241022', 'Claude Haiku 3.5', '2024-10-22'),
  model('claude-3-haiku-20240307', 'Claude Haiku 3', '2024-03-07'),
];

/** Aliases `GET /v1/models/{id}` resolves, like the provider's. */
export const MODEL_ALIASES: Readonly<Record<string, string>> = {
  'claude-opus-4-5': 'claude-opus-4-5-20251101',
  'claude-haiku-4-5': 'claude-haiku-4-5-20251001',
  'claude-sonnet-4-5': 'claude-sonnet-4-5-20250929',
  'claude-opus-4-1': 'claude-opus-4-1-20250805',
  'claude-opus-4-0': 'claude-opus-4-20250514',
  'claude-sonnet-4-0': 'claude-sonnet-4-20250514',
  'claude-3-7-sonnet-latest': 'claude-3-7-sonnet-20250219',
  'claude-3-5-haiku-latest': 'claude-3-5-haiku-20241022',
};

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
