/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { CacheFacts, cacheBy, cacheTable, cacheTotal } from '../components/cache-figures';
import { SpendNotice, spendWarnings } from '../components/spend-notice';
import { controlsSection } from '../components/controls-section';
import { TableView } from '../components/table-view';
import { usageBy, usageByDay } from '../data';
import { when, type Table } from '../table';
import { notFound, usageTable, type PageCtx, type PageResult } from './page';

/** One row per seat, and their usage. A member sees only themselves. */
export async function membersPage(p: PageCtx): Promise<PageResult> {
  const { deps, viewer } = p;
  const page = await deps.store.members.list(viewer.accountId, { status: 'all' }, { limit: 1000 });
  const members = viewer.kind === 'member' ? page.rows.filter((m) => m.id === viewer.memberId) : page.rows;
  const [usage, cache] = await Promise.all([usageBy(p.scope, 'member'), cacheBy(p.scope, 'member')]);
  const link = (id: string) => p.href(`/dashboard/members/${id}`);
  const tables: Table[] = [
    {
      id: 'members',
      caption: 'Members (one row per seat)',
      columns: [
        { label: 'Member' },
        { label: 'Email' },
        { label: 'Role' },
        { label: 'Status' },
        { label: 'Added' },
      ],
      rows: members.map((m) => [
        { text: m.name, href: link(m.id) },
        m.email,
        m.role,
        m.status,
        when(m.createdAt),
      ]),
      empty: 'No members yet.',
    },
    usageTable('usage-by-member', 'Usage by member', 'Member', usage, (l) => (l.id ? link(l.id) : null)),
    cacheTable('cache-by-member', 'Prompt caching by member', 'Member', cache, (id) =>
      id ? { text: members.find((m) => m.id === id)?.name ?? id, href: link(id) } : '(none)',
    ),
  ];
  return {
    title: 'Members',
    section: '/dashboard/members',
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

/** A member's usage per day, per key and per model. Another member's page does not exist for a member. */
export async function memberPage(p: PageCtx, id: string): Promise<PageResult> {
  const { deps, viewer } = p;
  if (viewer.kind === 'member' && viewer.memberId !== id) throw notFound('member', id);
  const member = await deps.store.members.get(viewer.accountId, id);
  if (!member) throw notFound('member', id);
  const scope = { ...p.scope, narrow: { member: id } };
  const [days, keys, models, cache, controls] = await Promise.all([
    usageByDay(scope),
    usageBy(scope, 'key'),
    usageBy(scope, 'model'),
    cacheBy(scope, 'key'),
    controlsSection(p, { kind: 'member', id }, `/dashboard/members/${id}`),
  ]);
  const warnings = await spendWarnings(deps, viewer.accountId, id);
  const tables = [
    usageTable('per-day', 'Per day', 'Day', days),
    usageTable('per-key', 'Per key', 'Key', keys, (l) => (l.id ? p.href(`/dashboard/keys/${l.id}`) : null)),
    usageTable('per-model', 'Per model', 'Model', models),
    cacheTable(
      'cache-per-key',
      'Prompt caching per key',
      'Key',
      cache,
      (k) => keys.find((l) => l.id === k)?.label ?? k ?? '(none)',
    ),
  ];
  const body = (
    <>
      <SpendNotice warnings={warnings} own={viewer.kind === 'member'} />
      <p class="lead">
        {member.email} · {member.role} · {member.status} ·{' '}
        <a href={p.href('/dashboard/calls', { member: id })}>this member's calls</a>
      </p>
      <CacheFacts figures={cacheTotal(cache)} />
      {controls}
      {tables.map((t) => (
        <TableView table={t} csvHref={p.csv(t.id)} />
      ))}
    </>
  );
  return { title: `Member: ${member.name}`, section: '/dashboard/members', tables, body };
}
