/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { TableView } from '../components/table-view';
import { callNames, callsTable } from '../calls-table';
import { groupLines, usageBy, type GroupLine } from '../data';
import { columnsAt, num } from '../table';
import { notFound, usageTable, type PageCtx, type PageResult } from './page';

/**
 * Request groups (logical actions): round trips (the calls made in the group), retries (extra
 * upstream attempts the gateway made) and wasted retries (those spent on calls that still
 * ended in an error), then tokens, cost and errors.
 */
export async function groupsPage(p: PageCtx): Promise<PageResult> {
  const lines = await groupLines(p.scope);
  const usage = usageTable('groups', 'Request groups', 'Group', lines, (l) =>
    p.href(`/dashboard/groups/${encodeURIComponent(l.id!)}`),
  );
  // Who and what made the calls first, then what they cost: on a laptop screen the rest scrolls.
  const table = columnsAt(
    {
      ...usage,
      columns: [
        usage.columns[0]!,
        { label: 'Member' },
        { label: 'Client' },
        ...['Round trips', 'Retries', 'Wasted retries'].map((label) => ({ label, numeric: true })),
        ...usage.columns.slice(1),
      ],
      rows: usage.rows.map(([head, ...rest], i) => [
        head!,
        lines[i]!.member,
        lines[i]!.client,
        num(lines[i]!.figures.requests),
        num(lines[i]!.retries),
        num(lines[i]!.wasted),
        ...rest,
      ]),
      foot: usage.foot && [
        usage.foot[0]!,
        '',
        '',
        ...[
          (l: GroupLine) => l.figures.requests,
          (l: GroupLine) => l.retries,
          (l: GroupLine) => l.wasted,
        ].map((f) => num(lines.reduce((t, l) => t + f(l), 0))),
        ...usage.foot.slice(1),
      ],
    },
    ['Cost (USD)', 'Requests', 'Errors'],
    3,
  );
  const body = (
    <>
      <TableView table={table} csvHref={p.csv(table.id)} />
      <p class="note">
        Round trips: the calls made in the group. Retries: extra upstream attempts the gateway made for those
        calls. Wasted retries: the retries of calls that still ended in an error.
      </p>
    </>
  );
  return { title: 'Groups', section: '/dashboard/groups', tables: [table], body };
}

const MAX_CALLS = 1000;

/** One group's calls in the order they were made (read from the call log by index). */
export async function groupPage(p: PageCtx, groupId: string): Promise<PageResult> {
  const { deps, viewer } = p;
  const memberId = viewer.kind === 'member' ? viewer.memberId : null;
  const page = await deps.store.calls.list(viewer.accountId, { groupId, memberId }, { limit: MAX_CALLS });
  if (page.rows.length === 0) throw notFound('group', groupId);
  const calls = page.rows.reverse();
  const names = await callNames(deps.store, viewer.accountId, calls);
  const usage = await usageBy({ ...p.scope, narrow: { group: groupId } }, 'group');
  const tables = [
    callsTable(
      deps.prices,
      'calls',
      `Calls in order${page.hasMore ? ` (the latest ${MAX_CALLS})` : ''}`,
      calls,
      names,
      (path) => p.href(path),
      p.range.zone,
    ),
    usageTable('group-total', `Group total, ${p.range.label}`, 'Group', usage),
  ];
  return {
    title: `Group: ${groupId}`,
    section: '/dashboard/groups',
    tables,
    body: (
      <>
        {tables.map((t) => (
          <TableView table={t} csvHref={p.csv(t.id)} />
        ))}
      </>
    ),
  };
}
