import { z } from 'zod';
import { formatCents, priceFor, rowCounts, TOKEN_TYPES, tokenCostCents, webSearchCostCents, type TokenType } from '../billing/prices';
import { billingSubject, dailyCharges } from '../billing/statement';
import type { AccountRecord, PlanRecord, Store, UsageDimension, UsageRow } from '../store';
import { bucketed, planBuckets } from './buckets';
import { timestamp } from './query';
import { dayStart } from './time-zone';
import { filtersOf, reportFilters } from './usage-report';

const GROUP_BY = ['workspace_id', 'description', 'api_key_id', 'user_id', 'model', 'group_id'] as const;

export const CostReportParams = z.object({
  starting_at: timestamp,
  ending_at: timestamp.optional(),
  bucket_width: z.literal('1d', { error: "bucket_width: the cost report has day buckets only ('1d')" }).default('1d'),
  group_by: z.array(z.enum(GROUP_BY)).optional(),
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
  currency: string;
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
function pricedParts(row: UsageRow, byDescription: boolean, byModel: boolean): CostItem[] {
  const price = priceFor(row.model);
  const counts = rowCounts(row);
  const base = { currency: 'USD', api_key_id: row.api_key_id, user_id: row.user_id, group_id: row.group_id, model: byModel || byDescription ? row.model : null };
  const parts: CostItem[] = TOKEN_TYPES.filter((t) => counts[t] > 0).map((t) => ({
    ...base,
    cents: tokenCostCents(price, t, counts[t]),
    description: byDescription ? `${price.displayName} Usage - ${TOKEN_LABEL[t]}` : null,
    cost_type: byDescription ? 'tokens' : null,
    token_type: byDescription ? t : null,
  }));
  if (counts.web_search_requests > 0) {
    parts.push({
      ...base,
      cents: webSearchCostCents(counts.web_search_requests),
      description: byDescription ? 'Web Search' : null,
      cost_type: byDescription ? 'web_search' : null,
      token_type: null,
    });
  }
  return parts;
}

/**
 * `GET /v1/organizations/cost_report`: what each day cost. Token costs are estimates in USD
 * from the list prices (billing/prices.ts), live keys only (test keys are never billed
 * upstream); the plan's charge is a `subscription` item in the plan's currency, spread over
 * the month's days and left out when a filter narrows the report to keys, members, models
 * or groups. A plan day (a UTC day) counts in the local day of the same date.
 */
export async function costReport(
  store: Pick<Store, 'usage' | 'members'>,
  account: AccountRecord,
  plan: PlanRecord,
  q: z.infer<typeof CostReportParams>,
  now: number,
) {
  const page = planBuckets({ startingAt: q.starting_at, endingAt: q.ending_at ?? null, width: '1d', limit: q.limit, page: q.page, now, timeZone: account.timeZone });
  const groups = new Set(q.group_by ?? []);
  const dims = (['api_key_id', 'user_id', 'group_id'] as const).filter((d) => groups.has(d));
  const filters = filtersOf(q);
  const rows = await store.usage.fromRollups({
    accountId: account.id, from: page.from, to: page.to, bucketSeconds: 86_400, timeZone: page.zone, groupBy: [...dims, 'model'] as UsageDimension[], filters, excludeTestKeys: true,
  });

  const byBucket = new Map<number, Map<string, CostItem>>();
  const add = (t: number, item: CostItem) => {
    if (!byBucket.has(t)) byBucket.set(t, new Map());
    const items = byBucket.get(t)!;
    const id = JSON.stringify([item.currency, item.description, item.cost_type, item.model, item.token_type, item.api_key_id, item.user_id, item.group_id]);
    const existing = items.get(id);
    if (existing) existing.cents += item.cents;
    else items.set(id, { ...item });
  };
  for (const row of rows) for (const part of pricedParts(row, groups.has('description'), groups.has('model'))) add(page.key(row.bucket!), part);

  const narrowed = Object.values(filters).some((v) => v && v.length);
  if (!narrowed) {
    const subject = await billingSubject(store, account, plan, page.from, page.to);
    for (const day of dailyCharges(subject, page.from, page.to)) {
      if (day.cents <= 0) continue;
      const seats = plan.perSeat ? `, ${day.seats} seat${day.seats === 1 ? '' : 's'}` : '';
      add(dayStart(page.zone, day.day.toISOString().slice(0, 10)), {
        currency: plan.currency, cents: day.cents, description: `${plan.name} plan${seats}`, cost_type: 'subscription',
        model: null, token_type: null, api_key_id: null, user_id: null, group_id: null,
      });
    }
  }

  const results = new Map<number, unknown[]>();
  for (const [t, items] of byBucket) {
    results.set(
      t,
      [...items.values()].map((i) => ({
        currency: i.currency,
        amount: formatCents(i.cents),
        workspace_id: null,
        description: i.description,
        cost_type: i.cost_type,
        context_window: null,
        model: i.model,
        service_tier: null,
        token_type: i.token_type,
        api_key_id: i.api_key_id,
        user_id: i.user_id,
        group_id: i.group_id,
      })),
    );
  }
  return bucketed(page, results);
}
