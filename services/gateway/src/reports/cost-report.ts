import { z } from 'zod';
import {
  formatCents,
  rowCounts,
  TOKEN_TYPES,
  type Prices,
  type Priced,
  type TokenType,
} from '../pricing/prices';
import type { Store } from '../store';
import type { UsageDimension, UsageRow } from '../call-log/usage-queries';
import { bucketed, planBuckets } from './buckets';
import { filtersOf, groupBy, reportFilters } from './params';
import { timestamp } from './query';

/** The provider's `description`, plus Keygate's key, member (`account_id` or `user_id`), model and request group. */
const GROUP_BY = ['description', 'api_key_id', 'account_id', 'user_id', 'model', 'group_id'] as const;

export const CostReportParams = z.object({
  starting_at: timestamp,
  ending_at: timestamp.optional(),
  bucket_width: z
    .literal('1d', { error: "bucket_width: the cost report has day buckets only ('1d')" })
    .default('1d'),
  group_by: groupBy(GROUP_BY),
  ...reportFilters,
  limit: z.coerce.number().int().min(1).optional(),
  page: z.string().optional(),
});

const TOKEN_LABEL: Record<TokenType, string> = {
  uncached_input_tokens: 'Input Tokens',
  output_tokens: 'Output Tokens',
  cache_read_input_tokens: 'Cache Read Input Tokens',
  'cache_creation.ephemeral_5m_input_tokens': 'Cache Write (5m) Input Tokens',
  'cache_creation.ephemeral_1h_input_tokens': 'Cache Write (1h) Input Tokens',
};

interface CostItem {
  cents: number;
  description: string | null;
  cost_type: string | null;
  model: string | null;
  token_type: string | null;
  api_key_id: string | null;
  user_id: string | null;
  group_id: string | null;
}

/** Splits one usage row into its priced parts: per token type, and web searches. */
function pricedParts(prices: Prices, row: UsageRow, byDescription: boolean, byModel: boolean): CostItem[] {
  const cost = prices.rowCost(row);
  const counts = rowCounts(row);
  const base = {
    api_key_id: row.api_key_id,
    user_id: row.user_id,
    group_id: row.group_id,
    model: byModel || byDescription ? row.model : null,
  };
  const parts: CostItem[] = TOKEN_TYPES.filter((t) => counts[t] > 0).map((t) => ({
    ...base,
    cents: cost.parts[t],
    description: byDescription ? `${cost.displayName} Usage - ${TOKEN_LABEL[t]}` : null,
    cost_type: byDescription ? 'tokens' : null,
    token_type: byDescription ? t : null,
  }));
  if (counts.web_search_requests > 0) {
    parts.push({
      ...base,
      cents: cost.parts.web_search,
      description: byDescription ? 'Web Search' : null,
      cost_type: byDescription ? 'web_search' : null,
      token_type: null,
    });
  }
  return parts;
}

/**
 * `GET /v1/organizations/cost_report`: what each day cost, as the provider reports it: USD
 * amounts in cents as decimal strings, derived from the tokens at the list price in force each day
 * (pricing/prices.ts callCost); a model with no price is left out and listed in `unpriced_models`,
 * live keys only (test keys are never billed upstream). Days start at local midnight in the
 * account's reporting zone (reports/time-zone.ts). The plan's own charge is not a provider
 * cost type and is in the plan's currency; `GET /v1/organizations/billing` has it.
 */
export async function costReport(
  { store, prices }: Priced<Pick<Store, 'usage'>>,
  accountId: string,
  q: z.infer<typeof CostReportParams>,
  now: number,
  timeZone?: string,
) {
  const page = planBuckets({
    startingAt: q.starting_at,
    endingAt: q.ending_at ?? null,
    width: '1d',
    limit: q.limit,
    page: q.page,
    now,
    timeZone,
  });
  const groups = new Set(q.group_by ?? []);
  const byMember = groups.has('user_id') || groups.has('account_id');
  const dims = [
    ...(groups.has('api_key_id') ? ['api_key_id'] : []),
    ...(byMember ? ['user_id'] : []),
    ...(groups.has('group_id') ? ['group_id'] : []),
  ];
  const rows = await store.usage.fromRollups({
    accountId,
    from: page.from,
    to: page.to,
    bucketSeconds: 86_400,
    timeZone: page.zone,
    groupBy: [...dims, 'model'] as UsageDimension[],
    filters: filtersOf(q),
    excludeTestKeys: true,
    pricing: true,
  });
  const unpriced = new Map<string, UnpricedModel>();

  const byBucket = new Map<number, Map<string, CostItem>>();
  for (const row of rows) {
    const t = page.key(row.bucket!);
    if (!byBucket.has(t)) byBucket.set(t, new Map());
    const items = byBucket.get(t)!;
    if (!prices.rowCost(row).priced) {
      noteUnpriced(unpriced, row);
      continue;
    }
    for (const part of pricedParts(prices, row, groups.has('description'), groups.has('model'))) {
      const id = JSON.stringify([
        part.description,
        part.cost_type,
        part.model,
        part.token_type,
        part.api_key_id,
        part.user_id,
        part.group_id,
      ]);
      const existing = items.get(id);
      if (existing) existing.cents += part.cents;
      else items.set(id, part);
    }
  }

  const results = new Map<number, unknown[]>();
  for (const [t, items] of byBucket) {
    results.set(
      t,
      [...items.values()].map((i) => ({
        currency: 'USD' as const,
        amount: formatCents(i.cents),
        workspace_id: null,
        description: i.description,
        cost_type: i.cost_type,
        context_window: null,
        model: i.model,
        service_tier: null,
        token_type: i.token_type,
        inference_geo: null,
        api_key_id: i.api_key_id,
        account_id: i.user_id,
        user_id: i.user_id,
        group_id: i.group_id,
      })),
    );
  }
  // Not a field of the provider's report: calls on a model with no price are left out of the
  // amounts above, never guessed, and named here with their tokens.
  return { ...bucketed(page, results), unpriced_models: [...unpriced.values()] };
}

interface UnpricedModel {
  model: string | null;
  requests: number;
  uncached_input_tokens: number;
  cache_creation_5m_input_tokens: number;
  cache_creation_1h_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
  web_search_requests: number;
}

function noteUnpriced(into: Map<string, UnpricedModel>, row: UsageRow): void {
  const id = row.model ?? '';
  const m = into.get(id) ?? {
    model: row.model,
    requests: 0,
    uncached_input_tokens: 0,
    cache_creation_5m_input_tokens: 0,
    cache_creation_1h_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: 0,
    web_search_requests: 0,
  };
  m.requests += row.requests;
  m.uncached_input_tokens += row.input_tokens;
  m.cache_creation_5m_input_tokens += row.cache_creation_5m_tokens;
  m.cache_creation_1h_input_tokens += row.cache_creation_1h_tokens;
  m.cache_read_input_tokens += row.cache_read_input_tokens;
  m.output_tokens += row.output_tokens;
  m.web_search_requests += row.web_search_requests;
  into.set(id, m);
}
