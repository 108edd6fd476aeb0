import type { z } from 'zod';
import { costReport, type CostReportParams } from '../reports/cost-report';
import { type reportFigures, usageReport, type UsageReportParams } from '../reports/usage-report';
import { usageSummary } from '../reports/usage-summary';
import { localDate } from '../reports/time-zone';
import type { AccountViewer, DashboardDeps } from './env';
import type { Range, ViewState } from './view-state';

export type Figures = ReturnType<typeof reportFigures>;
export type By = 'key' | 'member' | 'model' | 'group' | 'day';

/** One row of a usage table: what it is, its figures, and its cost in USD cents (live keys). */
export interface UsageLine {
  id: string | null;
  label: string | null;
  figures: Figures;
  costCents: number;
}

/** What every report of a page is asked for: whose data, which range, which filters. */
export interface ReportScope {
  deps: DashboardDeps;
  viewer: AccountViewer;
  range: Range;
  state: ViewState;
  /** Narrows further than the URL's filters (a member's or a key's own page). */
  narrow?: { member?: string; key?: string; group?: string; model?: string };
}

const FIELD = {
  key: 'api_key_id',
  member: 'user_id',
  model: 'model',
  group: 'group_id',
  day: 'day',
} as const;
const one = (v: string | undefined) => (v ? [v] : undefined);

/** The report filters of a scope; a member's reports are always their own. */
export function reportFilters(s: ReportScope) {
  const member = s.viewer.kind === 'member' ? s.viewer.memberId : (s.narrow?.member ?? s.state.member);
  return {
    api_key_ids: one(s.narrow?.key ?? s.state.key),
    user_ids: one(member),
    models: one(s.narrow?.model ?? s.state.model),
    group_ids: one(s.narrow?.group ?? s.state.group),
  };
}

export const zeroFigures = (): Figures => ({
  uncached_input_tokens: 0,
  cache_creation: { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: 0 },
  cache_read_input_tokens: 0,
  output_tokens: 0,
  server_tool_use: { web_search_requests: 0 },
  requests: 0,
  errors: 0,
});

export function addFigures(a: Figures, b: Figures): Figures {
  return {
    uncached_input_tokens: a.uncached_input_tokens + b.uncached_input_tokens,
    cache_creation: {
      ephemeral_1h_input_tokens:
        a.cache_creation.ephemeral_1h_input_tokens + b.cache_creation.ephemeral_1h_input_tokens,
      ephemeral_5m_input_tokens:
        a.cache_creation.ephemeral_5m_input_tokens + b.cache_creation.ephemeral_5m_input_tokens,
    },
    cache_read_input_tokens: a.cache_read_input_tokens + b.cache_read_input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    server_tool_use: {
      web_search_requests: a.server_tool_use.web_search_requests + b.server_tool_use.web_search_requests,
    },
    requests: a.requests + b.requests,
    errors: a.errors + b.errors,
  };
}

export const allTokens = (f: Figures) =>
  f.uncached_input_tokens +
  f.cache_creation.ephemeral_5m_input_tokens +
  f.cache_creation.ephemeral_1h_input_tokens +
  f.cache_read_input_tokens +
  f.output_tokens;

/**
 * Usage cost in USD cents per (day, id) from the account API's cost report, paged through. The
 * plan's charge (in the plan's currency) is not in it: the billing page shows that.
 */
export async function costs(s: ReportScope, by: By | null): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const groupBy = by && by !== 'day' ? [FIELD[by]] : [];
  let page: string | undefined;
  do {
    const q: z.infer<typeof CostReportParams> = {
      starting_at: s.range.from,
      ending_at: s.range.to,
      bucket_width: '1d',
      group_by: groupBy as never,
      limit: 31,
      page,
      ...reportFilters(s),
    };
    const report = await costReport(s.deps, s.viewer.accountId, q, s.deps.clock(), s.range.zone);
    for (const bucket of report.data) {
      for (const item of bucket.results as { amount: string; [k: string]: unknown }[]) {
        const id = by && by !== 'day' ? String(item[FIELD[by]]) : '';
        const k = `${localDate(s.range.zone, Date.parse(bucket.starting_at))}|${id}`;
        out.set(k, (out.get(k) ?? 0) + Number(item.amount));
      }
    }
    page = report.next_page ?? undefined;
  } while (page);
  return out;
}

function costOf(all: Map<string, number>, id: string | null, day?: string): number {
  let cents = 0;
  for (const [k, v] of all) {
    const [d, i] = k.split('|');
    if ((day === undefined || d === day) && (id === null || i === id)) cents += v;
  }
  return cents;
}

/** The models called in the range that have no price (the cost figures leave them out). */
export async function unpricedModels(s: ReportScope): Promise<string[]> {
  const rows = await s.deps.store.usage.fromRollups({
    accountId: s.viewer.accountId,
    from: s.range.from,
    to: s.range.to,
    bucketSeconds: null,
    groupBy: ['model'],
    excludeTestKeys: true,
    pricing: true,
  });
  return [
    ...new Set(rows.filter((r) => !s.deps.prices.rowCost(r).priced).map((r) => r.model ?? '(none)')),
  ].sort();
}

/** Usage over the range by one dimension (or by day), with cost: the account API's usage summary and cost report. */
export async function usageBy(s: ReportScope, by: By): Promise<UsageLine[]> {
  const q = { by, starting_at: s.range.from, ending_at: s.range.to, ...reportFilters(s) };
  const [summary, cost] = await Promise.all([
    usageSummary(s.deps.store, s.viewer.accountId, q, s.deps.clock(), s.range.zone),
    costs(s, by),
  ]);
  const label = by === 'key' ? 'api_key_name' : by === 'member' ? 'user_email' : null;
  return summary.data.map((row) => {
    const r = row as Record<string, unknown> & Figures;
    const id = (r[FIELD[by]] as string | null) ?? null;
    return {
      id,
      label: label ? ((r[label] as string | null) ?? null) : id,
      figures: {
        uncached_input_tokens: r.uncached_input_tokens,
        cache_creation: r.cache_creation,
        cache_read_input_tokens: r.cache_read_input_tokens,
        output_tokens: r.output_tokens,
        server_tool_use: r.server_tool_use,
        requests: r.requests,
        errors: r.errors,
      },
      costCents: by === 'day' ? costOf(cost, null, id ?? '') : costOf(cost, id ?? 'null'),
    };
  });
}

/** Every day of the range, empty days included. */
export async function usageByDay(s: ReportScope): Promise<UsageLine[]> {
  const byDay = new Map((await usageBy(s, 'day')).map((l) => [l.id, l]));
  return s.range.days.map(
    (day) => byDay.get(day) ?? { id: day, label: day, figures: zeroFigures(), costCents: 0 },
  );
}

export function total(lines: UsageLine[]): UsageLine {
  return lines.reduce(
    (t, l) => ({ ...t, figures: addFigures(t.figures, l.figures), costCents: t.costCents + l.costCents }),
    {
      id: null,
      label: 'Total',
      figures: zeroFigures(),
      costCents: 0,
    },
  );
}

/** Tokens and cost per day and per split value: the usage report and the cost report by day. */
export async function dailySplit(s: ReportScope, split: 'key' | 'member' | 'model') {
  const tokens = new Map<string, number>();
  let page: string | undefined;
  do {
    const q: z.infer<typeof UsageReportParams> = {
      starting_at: s.range.from,
      ending_at: s.range.to,
      bucket_width: '1d',
      group_by: [FIELD[split]],
      limit: 31,
      page,
      ...reportFilters(s),
    };
    const report = await usageReport(s.deps.store, s.viewer.accountId, q, s.deps.clock(), s.range.zone);
    for (const bucket of report.data) {
      for (const r of bucket.results) {
        const k = `${localDate(s.range.zone, Date.parse(bucket.starting_at))}|${r[FIELD[split]]}`;
        tokens.set(k, (tokens.get(k) ?? 0) + allTokens(r));
      }
    }
    page = report.next_page ?? undefined;
  } while (page);
  return { tokens, cost: await costs(s, split) };
}

export interface GroupLine extends UsageLine {
  retries: number;
  wasted: number;
  /** Who made the calls: a member's email, several, or none (app keys). */
  member: string;
  /** What made them: Claude Code (from its headers), else the key's name. */
  client: string;
}

const several = (n: number, what: string) => `${n} ${what}`;

/** The member and client columns of the groups page, for the groups shown. */
async function callers(
  s: ReportScope,
  ids: string[],
): Promise<Map<string, Pick<GroupLine, 'member' | 'client'>>> {
  const accountId = s.viewer.accountId;
  // A member sees only their own calls of a group, as everywhere else.
  const memberId = s.viewer.kind === 'member' ? s.viewer.memberId : null;
  const rows = await s.deps.store.dashboard.groupCallers(accountId, ids, s.range.from, s.range.to, memberId);
  const [emails, keyNames] = await Promise.all([
    s.deps.store.members.emails(accountId, [...new Set(rows.flatMap((r) => r.memberIds))]),
    s.deps.store.keys.names(accountId, [...new Set(rows.flatMap((r) => r.keyIds))]),
  ]);
  const one = (ids: string[], names: Map<string, string>, what: string, none: string) =>
    ids.length === 0 ? none : ids.length === 1 ? (names.get(ids[0]!) ?? ids[0]!) : several(ids.length, what);
  return new Map(
    rows.map((r) => [
      r.groupId,
      {
        member: one(r.memberIds, emails, 'members', '(none)'),
        client: r.claudeCode ? 'Claude Code' : one(r.keyIds, keyNames, 'keys', ''),
      },
    ]),
  );
}

/** Usage per request group (costliest first) with its retries: the groups page's rows. */
export async function groupLines(s: ReportScope): Promise<GroupLine[]> {
  const f = reportFilters(s);
  const [lines, retries] = await Promise.all([
    usageBy(s, 'group'),
    s.deps.store.dashboard.groupRetries(s.viewer.accountId, s.range.from, s.range.to, {
      memberId: f.user_ids?.[0],
      keyId: f.api_key_ids?.[0],
      model: f.models?.[0],
      groupId: f.group_ids?.[0],
    }),
  ]);
  const byGroup = new Map(retries.map((r) => [r.groupId, r]));
  const named = lines.filter((l) => l.id);
  const who = await callers(
    s,
    named.map((l) => l.id!),
  );
  return named
    .map((l) => ({
      ...l,
      retries: byGroup.get(l.id!)?.retries ?? 0,
      wasted: byGroup.get(l.id!)?.wasted ?? 0,
      member: who.get(l.id!)?.member ?? '(none)',
      client: who.get(l.id!)?.client ?? '',
    }))
    .sort((a, b) => b.costCents - a.costCents || b.figures.requests - a.figures.requests);
}
