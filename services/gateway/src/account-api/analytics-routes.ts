import { Hono } from 'hono';
import { z } from 'zod';
import type { ServiceDeps } from '../accounts/service';
import type { AdminEnv } from '../accounts/scope';
import { formatCents, rowCounts, TOKEN_TYPES, type Prices } from '../pricing/prices';
import { GatewayError } from '../lib/errors';
import { operation } from '../lib/operation';
import { groupBy } from '../reports/params';
import { timestamp } from '../reports/query';
import type { UsageDimension, UsageRow } from '../call-log/usage-queries';

/**
 * The provider's usage and cost analytics (beta `analytics-usage-cost-2026-08-24`). Wire shape
 * and paging read 2026-11-25 from the official TypeScript SDK 1.11's reference of these
 * endpoints (resources/beta/organization/analytics/usage.d.ts, cost.d.ts and
 * core/pagination.d.ts' ReportPageCursor; docs at
 * https://platform.claude.com/docs/en/api/beta/organization/analytics/usage/list and
 * https://platform.claude.com/docs/en/manage-claude/usage-cost-analytics-api): each row is
 * `{ starting_at, ending_at, group, usage | cost }`, `group` carries every dimension (null
 * unless grouped by), rows come `limit` (1–1000, default 20) a page with `has_more` and an
 * opaque `next_page` passed back as `page`, ranked by `order_by` (usage: total_tokens by default;
 * cost: amount) in `order` (desc by default). `time_bucket_width` (1d or 1h here: Keygate keeps
 * hourly rollups, so 1m is refused) needs `ending_at`; without it a row spans the range, rounded
 * down to the hour. `cost_type`/`token_type` fan-out rows do not count toward `limit`. Only the
 * dimensions Keygate knows are offered; `user_profile_id` is the Keygate member.
 */
export const ANALYTICS_BETA = 'analytics-usage-cost-2026-08-24';

const DIMS = [
  'model',
  'api_key_id',
  'user_profile_id',
  'service_tier',
  'speed',
  'context_window',
  'inference_geo',
] as const;
type Dim = (typeof DIMS)[number];
const COST_DIMS = [...DIMS, 'cost_type', 'token_type'] as const;
/** Every dimension of the provider's usage group: those Keygate does not know read null. */
const USAGE_GROUP_KEYS = [
  'actor',
  'actor_type',
  'agent_id',
  'api_key_id',
  'claude_tag_category',
  'claude_tag_user_id',
  'context_window',
  'deployment_id',
  'environment_id',
  'inference_geo',
  'model',
  'organization_id',
  'product',
  'rbac_group_id',
  'service_tier',
  'session_id',
  'slack_channel_id',
  'speed',
  'user_profile_id',
  'workspace_id',
] as const;
const COST_GROUP_KEYS = [...USAGE_GROUP_KEYS, 'cost_type', 'token_type'].sort();

const params = <
  const T extends readonly [string, ...string[]],
  const O extends readonly [string, ...string[]],
>(
  dims: T,
  orderBy: O,
) =>
  z.strictObject({
    starting_at: timestamp,
    ending_at: timestamp.optional(),
    time_bucket_width: z.enum(['1d', '1h', '1m']).optional(),
    group_by: groupBy(dims).refine((g) => !g || g.length <= 5, 'at most 5 dimensions'),
    limit: z.coerce.number().int().min(1).max(1000).default(20),
    page: z.string().max(200).optional(),
    order_by: z.enum(orderBy).optional(),
    order: z.enum(['asc', 'desc']).default('desc'),
  });

const DAY = 86_400_000;
const HOUR = 3_600_000;
const STORE_DIM: Partial<Record<Dim, UsageDimension>> = {
  model: 'model',
  api_key_id: 'api_key_id',
  user_profile_id: 'user_id',
};

/** The page token: the offset of the next row, opaque to the caller as the provider's is. */
const pageToken = (offset: number) =>
  `page_${Buffer.from(JSON.stringify({ o: offset })).toString('base64url')}`;
function pageOffset(token: string | undefined): number {
  if (token === undefined) return 0;
  try {
    const { o } = JSON.parse(Buffer.from(token.replace(/^page_/, ''), 'base64url').toString()) as {
      o: unknown;
    };
    if (token.startsWith('page_') && Number.isSafeInteger(o) && (o as number) >= 0) return o as number;
  } catch {}
  throw new GatewayError(
    'invalid_request_error',
    "page: not a next_page token from this endpoint's answers.",
  );
}

/** One page of ranked rows, as the provider pages them. */
function paged<T>(
  rows: T[],
  q: { limit: number; page?: string | undefined; order: 'asc' | 'desc' },
  rank: (row: T) => number,
  time: ((row: T) => string) | null,
  tie: (row: T) => string,
) {
  const sign = q.order === 'asc' ? 1 : -1;
  rows.sort(
    (a, b) =>
      (time ? sign * time(a).localeCompare(time(b)) : 0) ||
      (time ? rank(b) - rank(a) : sign * (rank(a) - rank(b))) ||
      tie(a).localeCompare(tie(b)),
  );
  const from = pageOffset(q.page);
  const to = from + q.limit;
  return {
    rows: rows.slice(from, to),
    has_more: to < rows.length,
    next_page: to < rows.length ? pageToken(to) : null,
  };
}

function dimValue(row: UsageRow, d: string): string | null {
  switch (d) {
    case 'speed':
      return row.speed ?? 'standard';
    case 'service_tier':
      return row.service_tier ?? 'standard';
    case 'inference_geo':
      return row.inference_geo ?? null;
    case 'user_profile_id':
      return row.user_id ?? null;
    case 'context_window':
      return (row.prompt_band ?? 0) >= 200_000 ? '200k-1M' : '0-200k';
    default:
      return (row as unknown as Record<string, string | null>)[d] ?? null;
  }
}

type Query = {
  starting_at: Date;
  ending_at?: Date | undefined;
  time_bucket_width?: '1d' | '1h' | '1m' | undefined;
  group_by: string[];
};

/** `GET /v1/organizations/analytics/usage` and `/analytics/cost` in the provider's wire shape. */
export function analyticsRoutes(deps: ServiceDeps & { prices: Prices }): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const tag = 'Usage and cost';
  const beta = (header: string | undefined) => {
    if (!header?.split(',').some((b) => b.trim() === ANALYTICS_BETA))
      throw new GatewayError(
        'invalid_request_error',
        `anthropic-beta: send '${ANALYTICS_BETA}' for this endpoint.`,
      );
  };

  async function rows(accountId: string, q: Query) {
    if (q.time_bucket_width === '1m')
      throw new GatewayError(
        'invalid_request_error',
        "time_bucket_width: Keygate keeps hourly rollups, so '1h' and '1d' are offered, not '1m'.",
      );
    if (q.time_bucket_width && !q.ending_at)
      throw new GatewayError('invalid_request_error', 'ending_at: required when time_bucket_width is set.');
    const seconds = q.time_bucket_width === '1h' ? 3600 : q.time_bucket_width === '1d' ? 86_400 : null;
    // Without a time bucket the report covers whole hours: both ends rounded down to the hour.
    const floor = (d: Date) => (seconds ? d : new Date(Math.floor(d.getTime() / HOUR) * HOUR));
    const from = floor(q.starting_at);
    const to = floor(q.ending_at ?? new Date(Math.min(deps.clock(), q.starting_at.getTime() + 31 * DAY)));
    if (to <= from) throw new GatewayError('invalid_request_error', 'ending_at: must be after starting_at.');
    const storeDims = q.group_by.flatMap((d) => (STORE_DIM[d as Dim] ? [STORE_DIM[d as Dim]!] : []));
    const data = await deps.store.usage.fromRollups({
      accountId,
      from,
      to,
      bucketSeconds: seconds,
      groupBy: storeDims,
      excludeTestKeys: true,
      pricing: true,
    });
    const span = (r: UsageRow) => {
      const start = r.bucket ?? from;
      return {
        starting_at: start.toISOString(),
        ending_at: (seconds ? new Date(start.getTime() + seconds * 1000) : to).toISOString(),
      };
    };
    const group = (r: UsageRow, keys: readonly string[]) =>
      Object.fromEntries(keys.map((k) => [k, q.group_by.includes(k) ? dimValue(r, k) : null])) as Record<
        string,
        string | null
      >;
    return { data, span, group };
  }

  type Raw = Omit<Query, 'group_by'> & {
    group_by?: string[] | undefined;
    limit: number;
    page?: string | undefined;
    order: 'asc' | 'desc';
    order_by?: string | undefined;
  };
  const query = (v: unknown) => {
    const raw = v as Raw;
    return { ...raw, group_by: raw.group_by ?? [] };
  };

  app.get(
    '/analytics/usage',
    operation({
      tag,
      summary: "Token usage by dimension, in the provider's analytics shape (beta), a page at a time",
      query: params(DIMS, ['total_tokens', 'uncached_input_tokens', 'output_tokens', 'requests', 'time']),
    }),
    async (c) => {
      beta(c.req.header('anthropic-beta'));
      const q = query(c.req.valid('query'));
      const { data, span, group } = await rows(c.var.scope.accountId, q);
      const out = new Map<string, Record<string, any>>();
      for (const r of data) {
        const s = span(r);
        const g = group(r, USAGE_GROUP_KEYS);
        const id = JSON.stringify([s.starting_at, g]);
        const n = rowCounts(r);
        const item = out.get(id) ?? {
          ...s,
          group: g,
          usage: {
            uncached_input_tokens: 0,
            cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
            cache_read_input_tokens: 0,
            output_tokens: 0,
            server_tool_use: { web_search_requests: 0 },
            requests: 0,
            total_tokens: 0,
          },
        };
        const u = item.usage;
        u.uncached_input_tokens += n.uncached_input_tokens;
        u.cache_creation.ephemeral_5m_input_tokens += n['cache_creation.ephemeral_5m_input_tokens'];
        u.cache_creation.ephemeral_1h_input_tokens += n['cache_creation.ephemeral_1h_input_tokens'];
        u.cache_read_input_tokens += n.cache_read_input_tokens;
        u.output_tokens += n.output_tokens;
        u.server_tool_use.web_search_requests += n.web_search_requests;
        u.requests += r.requests;
        u.total_tokens += TOKEN_TYPES.reduce((sum, t) => sum + n[t], 0);
        out.set(id, item);
      }
      const by = (q.order_by ?? 'total_tokens') as
        | 'total_tokens'
        | 'uncached_input_tokens'
        | 'output_tokens'
        | 'requests'
        | 'time';
      const page = paged(
        [...out.values()],
        q,
        (i) => (by === 'time' ? i.usage.total_tokens : i.usage[by]),
        by === 'time' && q.time_bucket_width ? (i) => i.starting_at : null,
        (i) => `${i.starting_at}${JSON.stringify(i.group)}`,
      );
      return c.json({
        data: page.rows,
        has_more: page.has_more,
        next_page: page.next_page,
        data_refreshed_at: new Date(deps.clock()).toISOString(),
      });
    },
  );

  app.get(
    '/analytics/cost',
    operation({
      tag,
      summary: "Cost in USD cents by dimension, in the provider's analytics shape (beta), a page at a time",
      query: params(COST_DIMS, ['amount', 'list_amount', 'time']),
    }),
    async (c) => {
      beta(c.req.header('anthropic-beta'));
      const q = query(c.req.valid('query'));
      const { data, span, group } = await rows(c.var.scope.accountId, q);
      const byPart = q.group_by.includes('cost_type') || q.group_by.includes('token_type');
      // Rows before the cost_type / token_type fan-out: these count toward `limit`.
      const base = new Map<
        string,
        {
          starting_at: string;
          ending_at: string;
          group: Record<string, string | null>;
          cents: number;
          requests: number;
          parts: Map<string, { cost_type: string; token_type: string | null; cents: number }>;
        }
      >();
      for (const r of data) {
        const cost = deps.prices.rowCost(r);
        // Unpriced usage is left out, never guessed (cost_report lists it as unpriced_models).
        if (!cost.priced) continue;
        const s = span(r);
        const g = group(r, COST_GROUP_KEYS);
        const id = JSON.stringify([s.starting_at, g]);
        const item = base.get(id) ?? { ...s, group: g, cents: 0, requests: 0, parts: new Map() };
        item.cents += cost.cents;
        item.requests += r.requests;
        const parts: [string, string | null, number][] = [
          ...TOKEN_TYPES.map((t) => ['tokens', t, cost.parts[t]] as [string, string, number]),
          ['web_search', null, cost.parts.web_search],
        ];
        for (const [costType, tokenType, cents] of parts) {
          if (cents <= 0) continue;
          const key = JSON.stringify([
            q.group_by.includes('cost_type') ? costType : null,
            q.group_by.includes('token_type') ? tokenType : null,
          ]);
          const part = item.parts.get(key) ?? {
            cost_type: costType,
            token_type: q.group_by.includes('token_type') ? tokenType : null,
            cents: 0,
          };
          part.cents += cents;
          item.parts.set(key, part);
        }
        base.set(id, item);
      }
      const timeOrder = q.order_by === 'time' && q.time_bucket_width;
      const page = paged(
        [...base.values()],
        q,
        (i) => i.cents,
        timeOrder ? (i) => i.starting_at : null,
        (i) => `${i.starting_at}${JSON.stringify(i.group)}`,
      );
      const row = (
        i: (typeof page.rows)[number],
        group: Record<string, string | null>,
        cents: number,
        requests: number | null,
      ) => ({
        starting_at: i.starting_at,
        ending_at: i.ending_at,
        group,
        cost: {
          amount: formatCents(cents),
          currency: 'USD',
          // Keygate prices at list price: no discount is known to it.
          list_amount: formatCents(cents),
          requests,
        },
      });
      return c.json({
        data: page.rows.flatMap((i) =>
          byPart
            ? [...i.parts.values()]
                .sort((a, b) => b.cents - a.cents)
                .map((p) =>
                  row(
                    i,
                    {
                      ...i.group,
                      cost_type: q.group_by.includes('cost_type') ? p.cost_type : null,
                      token_type: p.token_type,
                    },
                    p.cents,
                    null,
                  ),
                )
            : [row(i, i.group, i.cents, i.requests)],
        ),
        has_more: page.has_more,
        next_page: page.next_page,
        data_refreshed_at: new Date(deps.clock()).toISOString(),
      });
    },
  );
  return app;
}
