import { reportFigures } from '../reports/usage-report';
import { costRows, type ReportQuery, usageRows } from '../reports/usage';
import { summaryLines } from '../reports/usage-summary';
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

const DIMENSION = { key: 'key', member: 'member', model: 'model', group: 'group' } as const;

/** A scope as the reports' typed query: its account, range, filters and (for `day`, no) grouping. */
function reportQuery(s: ReportScope, by: By | null): ReportQuery {
  const f = reportFilters(s);
  return {
    accountId: s.viewer.accountId,
    period: { from: s.range.from, to: s.range.to, timeZone: s.range.zone },
    bucket: 'day',
    groupBy: by && by !== 'day' ? [DIMENSION[by]] : [],
    filters: { keyIds: f.api_key_ids, memberIds: f.user_ids, models: f.models, groupIds: f.group_ids },
  };
}

const idOf = (
  by: Exclude<By, 'day'>,
  r: { api_key_id: string | null; user_id: string | null; model: string | null; group_id: string | null },
) => r[FIELD[by]];

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
 * Usage cost in USD cents per (day, id), from the reports' cost rows. The plan's charge (in the
 * plan's currency) is not in it: the billing page shows that.
 */
export async function costs(s: ReportScope, by: By | null): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const row of await costRows(s.deps.store, reportQuery(s, by))) {
    const id =
      by && by !== 'day'
        ? String(
            idOf(by, {
              api_key_id: row.keyId,
              user_id: row.memberId,
              model: row.model,
              group_id: row.groupId,
            }),
          )
        : '';
    const k = `${localDate(s.range.zone, row.bucket!.getTime())}|${id}`;
    out.set(k, (out.get(k) ?? 0) + row.cents);
  }
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

/** Usage over the range by one dimension (or by day), with cost: the reports' summary lines and cost rows. */
export async function usageBy(s: ReportScope, by: By): Promise<UsageLine[]> {
  const q = reportQuery(s, by);
  const [lines, cost] = await Promise.all([
    summaryLines(s.deps.store, { accountId: q.accountId, period: q.period, by, filters: q.filters ?? {} }),
    costs(s, by),
  ]);
  return lines.map((l) => ({
    id: l.id,
    label: by === 'key' || by === 'member' ? l.label : l.id,
    figures: reportFigures(l.figures),
    costCents: by === 'day' ? costOf(cost, null, l.id ?? '') : costOf(cost, l.id ?? 'null'),
  }));
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

/** Tokens and cost per day and per split value, from the reports' usage and cost rows. */
export async function dailySplit(s: ReportScope, split: 'key' | 'member' | 'model') {
  const tokens = new Map<string, number>();
  const [rows, cost] = await Promise.all([usageRows(s.deps.store, reportQuery(s, split)), costs(s, split)]);
  for (const r of rows) {
    const k = `${localDate(s.range.zone, r.bucket!.getTime())}|${idOf(split, r)}`;
    tokens.set(k, (tokens.get(k) ?? 0) + allTokens(reportFigures(r)));
  }
  return { tokens, cost };
}

export interface GroupLine extends UsageLine {
  retries: number;
  wasted: number;
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
  return lines
    .filter((l) => l.id)
    .map((l) => ({
      ...l,
      retries: byGroup.get(l.id!)?.retries ?? 0,
      wasted: byGroup.get(l.id!)?.wasted ?? 0,
    }))
    .sort((a, b) => b.costCents - a.costCents || b.figures.requests - a.figures.requests);
}
