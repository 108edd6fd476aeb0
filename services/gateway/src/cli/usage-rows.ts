import { BUNDLED_CATALOG } from '../pricing/catalog/catalog';
import { callCost } from '../pricing/prices';
import type { Backend, Json } from './backend';
import { listAll } from './lookup';
import { isMidnight } from './when';

/** `--by` names: the usage report's group_by field each reads, and the label column it adds. */
export const DIMENSIONS = {
  key: { field: 'api_key_id', label: 'api_key_name' },
  member: { field: 'user_id', label: 'user_email' },
  day: { field: 'day', label: null },
  model: { field: 'model', label: null },
  group: { field: 'group_id', label: null },
  app: { field: 'app', label: null },
  environment: { field: 'environment', label: null },
  account: { field: 'account_id', label: 'account_name' },
} as const;

export type Dimension = keyof typeof DIMENSIONS;

export interface UsageRow {
  [column: string]: unknown;
  requests: number;
  errors: number;
  live_requests: number;
  test_requests: number;
  uncached_input_tokens: number;
  cache_creation: { ephemeral_1h_input_tokens: number; ephemeral_5m_input_tokens: number };
  cache_read_input_tokens: number;
  output_tokens: number;
  server_tool_use: { web_search_requests: number };
  /** Estimated at list prices (pricing/prices.ts), live keys only: test keys are never billed. */
  cost_usd: number;
  /** Some of the row's usage is on a model with no price: cost_usd leaves it out. */
  unpriced?: boolean;
}

interface Range {
  from: Date;
  to: Date | null;
}

/**
 * One account's usage report (day buckets when the range is whole days, else hours), every
 * page, grouped by the dimensions asked plus model (for the price) and key (live or test).
 */
async function reportResults(
  backend: Backend,
  accountPath: string,
  by: Dimension[],
  range: Range,
): Promise<Json[]> {
  const wholeDays = isMidnight(range.from) && (range.to === null || isMidnight(range.to));
  const groupBy = new Set([
    'model',
    'api_key_id',
    ...by.filter((d) => d !== 'day' && d !== 'account').map((d) => DIMENSIONS[d].field),
  ]);
  const query = {
    starting_at: range.from.toISOString(),
    ending_at: range.to?.toISOString(),
    bucket_width: wholeDays ? '1d' : '1h',
    limit: wholeDays ? '31' : '168',
    group_by: [...groupBy],
  };
  const results: Json[] = [];
  let page: string | undefined;
  do {
    const report = await backend.request('GET', `${accountPath}/usage_report/messages`, {
      query: { ...query, page },
    });
    for (const bucket of report.data)
      for (const r of bucket.results) results.push({ ...r, day: bucket.starting_at.slice(0, 10) });
    page = report.has_more ? report.next_page : undefined;
  } while (page);
  return results;
}

function emptyRow(): UsageRow {
  return {
    requests: 0,
    errors: 0,
    live_requests: 0,
    test_requests: 0,
    uncached_input_tokens: 0,
    cache_creation: { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: 0 },
    cache_read_input_tokens: 0,
    output_tokens: 0,
    server_tool_use: { web_search_requests: 0 },
    cost_usd: 0,
  };
}

function add(row: UsageRow, r: Json, test: boolean): void {
  row.requests += r.requests;
  row.errors += r.errors;
  row[test ? 'test_requests' : 'live_requests'] += r.requests;
  row.uncached_input_tokens += r.uncached_input_tokens;
  row.cache_creation.ephemeral_1h_input_tokens += r.cache_creation.ephemeral_1h_input_tokens;
  row.cache_creation.ephemeral_5m_input_tokens += r.cache_creation.ephemeral_5m_input_tokens;
  row.cache_read_input_tokens += r.cache_read_input_tokens;
  row.output_tokens += r.output_tokens;
  row.server_tool_use.web_search_requests += r.server_tool_use.web_search_requests;
  if (test) return;
  // Today's bundled list prices: the account API's cost report has the exact figures per day,
  // with the operator's rows.
  const cost = callCost(
    r.model,
    {
      uncached_input_tokens: r.uncached_input_tokens,
      output_tokens: r.output_tokens,
      cache_read_input_tokens: r.cache_read_input_tokens,
      'cache_creation.ephemeral_5m_input_tokens': r.cache_creation.ephemeral_5m_input_tokens,
      'cache_creation.ephemeral_1h_input_tokens': r.cache_creation.ephemeral_1h_input_tokens,
      web_search_requests: r.server_tool_use.web_search_requests,
    },
    { at: new Date() },
    BUNDLED_CATALOG,
  );
  if (cost.priced) row.cost_usd += cost.cents / 100;
  else row.unpriced = true;
}

/** Rows of one or two dimensions, summed from the accounts' usage reports. */
export async function usageRows(
  backend: Backend,
  accounts: { id: string; name: string }[],
  by: Dimension[],
  range: Range,
): Promise<UsageRow[]> {
  const rows = new Map<string, UsageRow>();
  for (const account of accounts) {
    const path = `/accounts/${encodeURIComponent(account.id)}`;
    const [results, keys, members] = await Promise.all([
      reportResults(backend, path, by, range),
      listAll(backend, `${path}/api_keys`),
      by.includes('member') ? listAll(backend, `${path}/users`, { status: 'all' }) : Promise.resolve([]),
    ]);
    const keyById = new Map(keys.map((k) => [k.id as string, k]));
    const labels: Record<string, Map<string, string>> = {
      api_key_name: new Map(keys.map((k) => [k.id, k.name])),
      user_email: new Map(members.map((m) => [m.id, m.email])),
      account_name: new Map([[account.id, account.name]]),
    };
    for (const r of results.map((x): Json => ({ ...x, account_id: account.id }))) {
      const values = by.map((d) => (r[DIMENSIONS[d].field] ?? null) as string | null);
      const id = JSON.stringify(values);
      let row = rows.get(id);
      if (!row) {
        row = emptyRow();
        const head: Record<string, unknown> = {};
        by.forEach((d, i) => {
          const { field, label } = DIMENSIONS[d];
          head[field] = values[i];
          if (label) head[label] = values[i] === null ? null : (labels[label]!.get(values[i]!) ?? null);
        });
        row = Object.assign(head, row);
        rows.set(id, row);
      }
      add(row, r, keyById.get(r.api_key_id)?.kind === 'test');
    }
  }
  const out: UsageRow[] = [...rows.values()].map((row) => ({
    ...row,
    cost_usd: Math.round(row.cost_usd * 1e6) / 1e6,
  }));
  return out.sort(
    (a, b) => String(a.day ?? '').localeCompare(String(b.day ?? '')) || b.requests - a.requests,
  );
}
