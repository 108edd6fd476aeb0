import type { Context } from 'hono';
import type { JSX } from 'hono/jsx/jsx-runtime';
import { GatewayError } from '../../lib/errors';
import type { ReportScope, UsageLine } from '../data';
import { total } from '../data';
import type { AccountViewer, DashboardDeps, DashboardEnv } from '../env';
import type { Cell, Table } from '../table';
import { USAGE_COLUMNS, usageCells } from '../usage-columns';
import { queryOf, rangeOf, type Range, type ViewState } from '../view-state';

/** What a page handler returns: its tables (also served as CSV) and its body. */
export interface PageResult {
  title: string;
  section: string;
  tables: Table[];
  body: JSX.Element;
  status?: 200 | 201 | 400;
  /** The page does not depend on the reporting period (no period picker). */
  periodless?: boolean;
}

export interface PageCtx {
  c: Context<DashboardEnv>;
  deps: DashboardDeps;
  viewer: AccountViewer;
  state: ViewState;
  range: Range;
  scope: ReportScope;
  /** A link that keeps the period and filters. */
  href(path: string, overrides?: Partial<Record<keyof ViewState, string | undefined>>): string;
  /** This very page and table, as CSV. */
  csv(tableId: string): string;
}

export function pageCtx(c: Context<DashboardEnv>, deps: DashboardDeps): PageCtx {
  const viewer = c.var.viewer;
  if (viewer.kind === 'operator')
    throw new GatewayError(
      'not_found_error',
      'This page shows one account: the operator sees the accounts view.',
    );
  const state = c.var.state;
  const range = rangeOf(state, deps.clock(), c.var.account?.timeZone);
  return {
    c,
    deps,
    viewer,
    state,
    range,
    scope: { deps, viewer, range, state },
    href: (path, overrides) => path + queryOf(state, overrides),
    csv(tableId) {
      const url = new URL(c.req.url);
      url.searchParams.set('format', 'csv');
      url.searchParams.set('table', tableId);
      return `${url.pathname}${url.search}`;
    },
  };
}

/** A usage table: one labelled row per line, the usage columns, and a total. */
export function usageTable(
  id: string,
  caption: string,
  first: string,
  lines: UsageLine[],
  link?: (l: UsageLine) => string | null,
): Table {
  const head = (l: UsageLine): Cell => {
    const text = l.label ?? l.id ?? '(none)';
    const href = link?.(l);
    return href ? { text, href } : text;
  };
  return {
    id,
    caption,
    columns: [{ label: first }, ...USAGE_COLUMNS],
    rows: lines.map((l) => [head(l), ...usageCells(l)]),
    foot: lines.length > 1 ? ['Total', ...usageCells(total(lines))] : undefined,
  };
}

export const notFound = (what: string, id: string) =>
  new GatewayError('not_found_error', `No ${what} '${id}' here.`);
