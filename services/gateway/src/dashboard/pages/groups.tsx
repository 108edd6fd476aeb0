/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { TableView } from '../components/table-view';
import { callsTable } from '../calls-table';
import { usageBy } from '../data';
import { notFound, usageTable, type PageCtx, type PageResult } from './page';

/** Request groups (logical actions): calls, tokens, cost and errors of each. */
export async function groupsPage(p: PageCtx): Promise<PageResult> {
  const lines = (await usageBy(p.scope, 'group')).filter((l) => l.id);
  lines.sort((a, b) => b.costCents - a.costCents || b.figures.requests - a.figures.requests);
  const table = usageTable('groups', 'Request groups', 'Group', lines, (l) => p.href(`/dashboard/groups/${encodeURIComponent(l.id!)}`));
  return { title: 'Groups', section: '/dashboard/groups', tables: [table], body: <TableView table={table} csvHref={p.csv(table.id)} /> };
}

const MAX_CALLS = 1000;

/** One group's calls in the order they were made (read from the call log by index). */
export async function groupPage(p: PageCtx, groupId: string): Promise<PageResult> {
  const { deps, viewer } = p;
  const memberId = viewer.kind === 'member' ? viewer.memberId : null;
  const page = await deps.store.requests.list(viewer.accountId, { groupId, memberId }, { limit: MAX_CALLS });
  if (page.rows.length === 0) throw notFound('group', groupId);
  const calls = page.rows.reverse();
  const names = await deps.store.keys.names(viewer.accountId, [...new Set(calls.map((c) => c.keyId).filter((k): k is string => !!k))]);
  const usage = await usageBy({ ...p.scope, narrow: { group: groupId } }, 'group');
  const tables = [
    callsTable('calls', `Calls in order${page.hasMore ? ` (the latest ${MAX_CALLS})` : ''}`, calls, names, (path) => p.href(path)),
    usageTable('group-total', `Group total, ${p.range.label}`, 'Group', usage),
  ];
  return {
    title: `Group: ${groupId}`,
    section: '/dashboard/groups',
    tables,
    body: <>{tables.map((t) => <TableView table={t} csvHref={p.csv(t.id)} />)}</>,
  };
}
