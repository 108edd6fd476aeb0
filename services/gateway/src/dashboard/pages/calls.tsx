/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { z } from 'zod';
import { parseOr400 } from '../../lib/validation';
import { callNames, callsTable, endpointLabel } from '../calls-table';
import { KeptFields } from '../components/controls';
import { TableView } from '../components/table-view';
import { queryOf } from '../view-state';
import type { PageCtx, PageResult } from './page';

const PAGE_SIZE = 50;
const CSV_BATCH = 1000;
const Cursor = z.object({
  after: z.string().min(1).max(100).optional(),
  before: z.string().min(1).max(100).optional(),
});

const TEXT_FILTERS = [
  ['app', 'App'],
  ['env', 'Environment'],
  ['model', 'Model'],
  ['group', 'Group'],
  ['status', 'Status (ok, error or a code)'],
] as const;

/** The call log, newest first, one page at a time through the (account, time) index. */
export async function callsPage(p: PageCtx): Promise<PageResult> {
  const { deps, viewer, state, range } = p;
  const cursor = parseOr400(Cursor, { after: p.c.req.query('after'), before: p.c.req.query('before') });
  const member = viewer.kind === 'member' ? viewer.memberId : (state.member ?? null);
  const status =
    state.status === undefined
      ? null
      : /^\d+$/.test(state.status)
        ? Number(state.status)
        : (state.status as 'ok' | 'error');
  const filter = {
    keyId: state.key ?? null,
    memberId: member,
    app: state.app ?? null,
    environment: state.env ?? null,
    model: state.model ?? null,
    endpoint: state.endpoint ?? null,
    groupId: state.group ?? null,
    status,
    from: range.from,
    to: range.to,
  };
  const [page, keys, members, endpoints] = await Promise.all([
    deps.store.calls.list(viewer.accountId, filter, {
      limit: PAGE_SIZE,
      afterId: cursor.after ?? null,
      beforeId: cursor.after ? null : (cursor.before ?? null),
    }),
    deps.store.keys.list(
      viewer.accountId,
      { memberId: viewer.kind === 'member' ? viewer.memberId : null },
      { limit: 1000 },
    ),
    viewer.kind === 'admin'
      ? deps.store.members.list(viewer.accountId, { status: 'all' }, { limit: 1000 })
      : Promise.resolve({ rows: [], hasMore: false }),
    deps.store.calls.endpoints(viewer.accountId, range.from, range.to),
  ]);
  // The one asked for stays a choice when the period holds no call to it.
  if (state.endpoint && !endpoints.includes(state.endpoint)) endpoints.push(state.endpoint);
  const tableOf = async (caption: string, calls: typeof page.rows) =>
    callsTable(
      deps.prices,
      'calls',
      caption,
      calls,
      await callNames(deps.store, viewer.accountId, calls),
      (path) => p.href(path),
      p.range.zone,
    );
  const table = {
    ...(await tableOf('Calls, newest first', page.rows)),
    // The CSV holds the whole filtered log, read from the database a page at a time while it streams.
    async *allRows() {
      let after: string | null = null;
      for (;;) {
        const batch = await deps.store.calls.list(viewer.accountId, filter, {
          limit: CSV_BATCH,
          afterId: after,
        });
        yield (await tableOf('', batch.rows)).rows;
        after = batch.rows.at(-1)?.id ?? null;
        if (!batch.hasMore || !after) return;
      }
    },
  };
  const csvHref = p.csv(table.id).replace(/&(after|before)=[^&]*/g, '');
  const base = `/dashboard/calls${queryOf(state)}`;
  const join = base.includes('?') ? '&' : '?';
  const first = page.rows[0]?.id;
  const last = page.rows.at(-1)?.id;
  const backwards = !!cursor.before && !cursor.after;
  const hasNewer = backwards ? page.hasMore : !!cursor.after;
  const hasOlder = backwards ? true : page.hasMore;
  const body = (
    <>
      <form method="get" action="/dashboard/calls" class="filters" aria-label="Filter calls">
        <KeptFields state={state} except={['key', 'member', 'endpoint', ...TEXT_FILTERS.map(([k]) => k)]} />
        <label>
          Key
          <select name="key">
            <option value="">any</option>
            {keys.rows.map((k) => (
              <option value={k.id} selected={state.key === k.id}>
                {k.name}
              </option>
            ))}
          </select>
        </label>
        {viewer.kind === 'admin' && (
          <label>
            Member
            <select name="member">
              <option value="">any</option>
              {members.rows.map((m) => (
                <option value={m.id} selected={state.member === m.id}>
                  {m.email}
                </option>
              ))}
            </select>
          </label>
        )}
        <label>
          Endpoint
          <select name="endpoint">
            <option value="">any</option>
            {endpoints.map((e) => (
              <option value={e} selected={state.endpoint === e}>
                {endpointLabel(e)}
              </option>
            ))}
          </select>
        </label>
        {TEXT_FILTERS.map(([name, label]) => (
          <label>
            {label} <input name={name} value={state[name] ?? ''} />
          </label>
        ))}
        <button type="submit">Filter</button>
      </form>
      <TableView table={table} csvHref={csvHref} csvLabel="CSV of the whole filtered log" />
      <nav class="pager" aria-label="Pages of the call log">
        {hasNewer && first && <a href={`${base}${join}before=${first}`}>Newer calls</a>}
        {hasOlder && last && <a href={`${base}${join}after=${last}`}>Older calls</a>}
      </nav>
    </>
  );
  return { title: 'Call log', section: '/dashboard/calls', tables: [table], body };
}
