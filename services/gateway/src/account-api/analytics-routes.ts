import { Hono } from 'hono';
import { z } from 'zod';
import type { ServiceDeps } from '../accounts/service';
import type { AdminEnv } from '../accounts/scope';
import { formatCents, rowCost, rowCounts, TOKEN_TYPES } from '../pricing/prices';
import { GatewayError } from '../lib/errors';
import { operation } from '../lib/operation';
import { groupBy } from '../reports/params';
import { timestamp } from '../reports/query';
import type { UsageDimension, UsageRow } from '../store';

/**
 * The provider's usage and cost analytics (beta `analytics-usage-cost-2026-08-24`), read
 * 2026-11-25 from platform.claude.com/docs/en/manage-claude/usage-cost-analytics-api and the
 * SDK references (…/api/go/beta/organization/analytics/cost; rubydoc BetaAnalyticsUsage…Item):
 * usage rows carry their dimensions and token counts flat, cost rows a `group` and a `cost`
 * of fractional cents. Only the dimensions Keygate knows are offered.
 */
export const ANALYTICS_BETA = 'analytics-usage-cost-2026-08-24';

const DIMS = [
  'model',
  'api_key_id',
  'user_id',
  'service_tier',
  'speed',
  'context_window',
  'inference_geo',
] as const;
type Dim = (typeof DIMS)[number];
const COST_DIMS = [...DIMS, 'cost_type', 'token_type'] as const;

const params = <const T extends readonly [string, ...string[]]>(dims: T) =>
  z.object({
    starting_at: timestamp,
    ending_at: timestamp.optional(),
    bucket_width: z.enum(['1d', '1h']).optional(),
    group_by: groupBy(dims),
  });

const DAY = 86_400_000;
const STORE_DIM: Partial<Record<Dim, UsageDimension>> = {
  model: 'model',
  api_key_id: 'api_key_id',
  user_id: 'user_id',
};

function dimValue(row: UsageRow, d: string): string | null {
  switch (d) {
    case 'speed':
      return row.speed ?? 'standard';
    case 'service_tier':
      return row.service_tier ?? 'standard';
    case 'inference_geo':
      return row.inference_geo ?? null;
    case 'context_window':
      return (row.prompt_band ?? 0) >= 200_000 ? '200k-1M' : '0-200k';
    default:
      return (row as unknown as Record<string, string | null>)[d] ?? null;
  }
}

/** `GET /v1/organizations/analytics/usage` and `/analytics/cost` in the provider's wire shape. */
export function analyticsRoutes(deps: ServiceDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const tag = 'Usage and cost';
  const beta = (header: string | undefined) => {
    if (!header?.split(',').some((b) => b.trim() === ANALYTICS_BETA))
      throw new GatewayError(
        'invalid_request_error',
        `anthropic-beta: send '${ANALYTICS_BETA}' for this endpoint.`,
      );
  };

  async function rows(
    accountId: string,
    q: {
      starting_at: Date;
      ending_at?: Date | undefined;
      bucket_width?: string | undefined;
      group_by: string[];
    },
  ) {
    const to = q.ending_at ?? new Date(Math.min(deps.clock(), q.starting_at.getTime() + 31 * DAY));
    if (to <= q.starting_at)
      throw new GatewayError('invalid_request_error', 'ending_at: must be after starting_at.');
    const dims = q.group_by ?? [];
    const storeDims = dims.flatMap((d) => (STORE_DIM[d as Dim] ? [STORE_DIM[d as Dim]!] : []));
    const seconds = q.bucket_width === '1h' ? 3600 : q.bucket_width === '1d' ? 86_400 : null;
    const data = await deps.store.usage.fromRollups({
      accountId,
      from: q.starting_at,
      to,
      bucketSeconds: seconds,
      groupBy: storeDims,
      excludeTestKeys: true,
      pricing: true,
    });
    const span = (r: UsageRow) => {
      const start = r.bucket ?? q.starting_at;
      return {
        starting_at: start.toISOString(),
        ending_at: (seconds ? new Date(start.getTime() + seconds * 1000) : to).toISOString(),
      };
    };
    return { data, span };
  }

  app.get(
    '/analytics/usage',
    operation({
      tag,
      summary: "Token usage by dimension, in the provider's analytics shape (beta)",
      query: params(DIMS),
    }),
    async (c) => {
      beta(c.req.header('anthropic-beta'));
      const v = c.req.valid('query');
      const q = { ...v, group_by: (v.group_by ?? []) as string[] };
      const { data, span } = await rows(c.var.scope.accountId, q);
      const out = new Map<string, Record<string, any>>();
      for (const r of data) {
        const s = span(r);
        const dims = Object.fromEntries(DIMS.map((d) => [d, q.group_by.includes(d) ? dimValue(r, d) : null]));
        const id = JSON.stringify([s.starting_at, dims]);
        const c = rowCounts(r);
        const item = out.get(id) ?? {
          ...s,
          ...dims,
          uncached_input_tokens: 0,
          cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
          cache_read_input_tokens: 0,
          output_tokens: 0,
          server_tool_use: { web_search_requests: 0 },
          requests: 0,
          total_tokens: 0,
        };
        item.uncached_input_tokens += c.uncached_input_tokens;
        item.cache_creation.ephemeral_5m_input_tokens += c['cache_creation.ephemeral_5m_input_tokens'];
        item.cache_creation.ephemeral_1h_input_tokens += c['cache_creation.ephemeral_1h_input_tokens'];
        item.cache_read_input_tokens += c.cache_read_input_tokens;
        item.output_tokens += c.output_tokens;
        item.server_tool_use.web_search_requests += c.web_search_requests;
        item.requests += r.requests;
        item.total_tokens += TOKEN_TYPES.reduce((sum, t) => sum + c[t], 0);
        out.set(id, item);
      }
      return c.json({ data: [...out.values()], has_more: false, next_page: null });
    },
  );

  app.get(
    '/analytics/cost',
    operation({
      tag,
      summary: "Cost in USD by dimension, in the provider's analytics shape (beta)",
      query: params(COST_DIMS),
    }),
    async (c) => {
      beta(c.req.header('anthropic-beta'));
      const v = c.req.valid('query');
      const q = { ...v, group_by: (v.group_by ?? []) as string[] };
      const { data, span } = await rows(c.var.scope.accountId, q);
      const byPart = q.group_by.includes('cost_type') || q.group_by.includes('token_type');
      const out = new Map<
        string,
        {
          starting_at: string;
          ending_at: string;
          group: Record<string, string | null>;
          cents: number;
          requests: number;
        }
      >();
      for (const r of data) {
        const cost = rowCost(r);
        // Unpriced usage is left out, never guessed (cost_report lists it as unpriced_models).
        if (!cost.priced) continue;
        const s = span(r);
        const parts: [string | null, string | null, number][] = byPart
          ? [
              ...TOKEN_TYPES.map((t) => ['tokens', t, cost.parts[t]] as [string, string, number]),
              ['web_search', null, cost.parts.web_search] as [string, null, number],
            ].filter((p) => p[2] > 0)
          : [[null, null, cost.cents]];
        for (const [costType, tokenType, cents] of parts) {
          const group: Record<string, string | null> = Object.fromEntries(
            DIMS.filter((d) => q.group_by.includes(d)).map((d) => [d, dimValue(r, d)]),
          );
          if (q.group_by.includes('cost_type')) group.cost_type = costType;
          if (q.group_by.includes('token_type')) group.token_type = tokenType;
          const id = JSON.stringify([s.starting_at, group]);
          const item = out.get(id) ?? { ...s, group, cents: 0, requests: 0 };
          item.cents += cents;
          item.requests += r.requests;
          out.set(id, item);
        }
      }
      return c.json({
        data: [...out.values()].map((i) => ({
          starting_at: i.starting_at,
          ending_at: i.ending_at,
          group: i.group,
          cost: {
            amount: formatCents(i.cents),
            currency: 'USD',
            // Keygate prices at list price: no discount is known to it.
            list_amount: formatCents(i.cents),
            request_count: byPart ? null : i.requests,
          },
        })),
        has_more: false,
        next_page: null,
      });
    },
  );
  return app;
}
