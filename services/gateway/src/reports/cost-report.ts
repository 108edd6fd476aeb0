import { z } from 'zod';
import { formatCents, priceFor, type TokenType } from '../pricing/prices';
import type { Store } from '../store';
import { bucketed, planBuckets } from './buckets';
import { filtersOf, groupBy, reportFilters } from './params';
import { timestamp } from './query';
import { type CostRow, costRows } from './usage';

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

/** A priced part under the provider's cost-report fields, for the groups asked for. */
function costItem(row: CostRow, byDescription: boolean, byModel: boolean): CostItem {
  const web = row.part === 'web_search';
  return {
    cents: row.cents,
    description: !byDescription
      ? null
      : web
        ? 'Web Search'
        : `${priceFor(row.model).displayName} Usage - ${TOKEN_LABEL[row.part as TokenType]}`,
    cost_type: byDescription ? (web ? 'web_search' : 'tokens') : null,
    model: byModel || byDescription ? row.model : null,
    token_type: byDescription && !web ? row.part : null,
    api_key_id: row.keyId,
    user_id: row.memberId,
    group_id: row.groupId,
  };
}

/**
 * `GET /v1/organizations/cost_report`: what each day cost, as the provider reports it: USD
 * amounts in cents as decimal strings, estimated from the list prices (pricing/prices.ts),
 * live keys only (test keys are never billed upstream). Days start at local midnight in the
 * account's reporting zone (reports/time-zone.ts). The plan's own charge is not a provider
 * cost type and is in the plan's currency; `GET /v1/organizations/billing` has it.
 */
export async function costReport(
  store: Pick<Store, 'usage'>,
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
  const rows = await costRows(store, {
    accountId,
    period: { from: page.from, to: page.to, timeZone: page.zone },
    bucket: 'day',
    groupBy: [
      ...(groups.has('api_key_id') ? ['key' as const] : []),
      ...(groups.has('user_id') || groups.has('account_id') ? ['member' as const] : []),
      ...(groups.has('group_id') ? ['group' as const] : []),
    ],
    filters: filtersOf(q),
  });

  const byBucket = new Map<number, Map<string, CostItem>>();
  for (const row of rows) {
    const t = page.key(row.bucket!);
    if (!byBucket.has(t)) byBucket.set(t, new Map());
    const items = byBucket.get(t)!;
    const part = costItem(row, groups.has('description'), groups.has('model'));
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
  return bucketed(page, results);
}
