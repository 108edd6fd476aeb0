import type { TroubleRow } from './dashboard-queries';

/** The overview's error categories, in the order it lists them. */
export const CATEGORIES = [
  'Rate limit',
  'Spend limit or budget',
  'Billing paused',
  'Overloaded',
  'Timeout',
  'Upstream error',
  'Malformed tool call',
  'Client gone',
  'Refused (other 4xx)',
  'Served after retries',
] as const;
export type Category = (typeof CATEGORIES)[number];

export function categoryOf(r: Pick<TroubleRow, 'errorType' | 'status' | 'refusal'>): Category {
  const t = r.errorType ?? '';
  // Money refusals answer 429 as the provider's gateway does, but are no rate limit.
  if (r.refusal === 'spend_limit' || r.refusal === 'budget' || r.refusal === 'key_spend_cap')
    return 'Spend limit or budget';
  if (r.refusal === 'billing') return 'Billing paused';
  if (t === 'billing_error') return r.status === 429 ? 'Spend limit or budget' : 'Billing paused';
  if (t === 'rate_limit_error' || r.status === 429) return 'Rate limit';
  if (t === 'overloaded_error' || r.status === 529) return 'Overloaded';
  if (t.includes('timeout') || r.status === 504 || r.status === 408) return 'Timeout';
  if (t.includes('tool')) return 'Malformed tool call';
  if (t === 'client_closed' || r.status === 499) return 'Client gone';
  if (t === 'api_error' || r.status >= 500 || (t && r.status < 400)) return 'Upstream error';
  if (r.status >= 400) return 'Refused (other 4xx)';
  return 'Served after retries';
}

export interface CategoryLine {
  category: Category;
  calls: number;
  retried: number;
  retries: number;
}

export function byCategory(rows: TroubleRow[]): CategoryLine[] {
  const out = new Map<Category, CategoryLine>(
    CATEGORIES.map((category) => [category, { category, calls: 0, retried: 0, retries: 0 }]),
  );
  for (const r of rows) {
    const line = out.get(categoryOf(r))!;
    line.calls += r.calls;
    line.retried += r.retried;
    line.retries += r.retries;
  }
  return [...out.values()];
}
