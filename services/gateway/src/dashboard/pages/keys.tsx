/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { KeyRecord } from '../../tenancy/key-queries';
import { controlsSection } from '../components/controls-section';
import { CreateKeyForm, KeyActions, SecretOnce } from '../components/key-forms';
import { keyRights } from '../key-rights';
import { TableView } from '../components/table-view';
import { usageBy, usageByDay } from '../data';
import { CacheFacts, cacheBy, cacheTable, cacheTotal } from '../components/cache-figures';
import { when, type Table } from '../table';
import { queryOf } from '../view-state';
import { notFound, usageTable, type PageCtx, type PageResult } from './page';

export interface Flash {
  name: string;
  secret: string;
}

const scopeOf = (k: KeyRecord, emails: Map<string, string>) =>
  [
    k.memberId ? `member ${emails.get(k.memberId) ?? k.memberId}` : null,
    k.app && `app ${k.app}`,
    k.environment && `env ${k.environment}`,
  ]
    .filter(Boolean)
    .join(', ') || 'account';

/** Keys (scope, status, last used) and their usage; admins create, rotate and revoke here. */
export async function keysPage(p: PageCtx, flash?: Flash): Promise<PageResult> {
  const { deps, viewer } = p;
  await deps.flushLastUsed?.().catch(() => {});
  const memberId = viewer.kind === 'member' ? viewer.memberId : null;
  const [keys, members, usage] = await Promise.all([
    deps.store.keys.list(viewer.accountId, { memberId }, { limit: 1000 }),
    deps.store.members.list(viewer.accountId, { status: 'active' }, { limit: 1000 }),
    usageBy(p.scope, 'key'),
  ]);
  const cache = await cacheBy(p.scope, 'key');
  const emails = new Map(members.rows.map((m) => [m.id, m.email]));
  const rights = keyRights(viewer, p.c.var.account);
  const link = (id: string) => p.href(`/dashboard/keys/${id}`);
  const tables: Table[] = [
    {
      id: 'keys',
      caption: 'Keys',
      columns: ['Key', 'Hint', 'Kind', 'Scope', 'Status', 'Last used'].map((label) => ({ label })),
      rows: keys.rows.map((k) => [
        { text: k.name, href: link(k.id) },
        k.hint,
        k.kind,
        scopeOf(k, emails),
        k.status,
        when(k.lastUsedAt),
      ]),
      empty: 'No keys yet.',
    },
    usageTable('usage-by-key', 'Usage by key', 'Key', usage, (l) => (l.id ? link(l.id) : null)),
    cacheTable('cache-by-key', 'Prompt caching by key', 'Key', cache, (id) =>
      id ? { text: keys.rows.find((k) => k.id === id)?.name ?? id, href: link(id) } : '(none)',
    ),
  ];
  const body = (
    <>
      {flash && <SecretOnce {...flash} />}
      {rights && (
        <CreateKeyForm
          csrf={viewer.csrf}
          action={`/dashboard/keys${queryOf(p.state)}`}
          members={rights.ownMemberId ? null : members.rows}
        />
      )}
      {tables.map((t) => (
        <TableView table={t} csvHref={p.csv(t.id)} />
      ))}
    </>
  );
  return {
    title: 'Keys',
    section: '/dashboard/keys',
    tables,
    body,
    ...(flash ? { status: 201 as const } : {}),
  };
}

/** One key: its scope and state, its usage per day and per model, and (for admins) rotate and revoke. */
export async function keyPage(p: PageCtx, id: string, flash?: Flash): Promise<PageResult> {
  const { deps, viewer } = p;
  await deps.flushLastUsed?.().catch(() => {});
  const key = await deps.store.keys.get(viewer.accountId, id);
  if (!key || (viewer.kind === 'member' && key.memberId !== viewer.memberId)) throw notFound('key', id);
  const scope = { ...p.scope, narrow: { key: id } };
  const rights = keyRights(viewer, p.c.var.account);
  const [days, models, cache, controls] = await Promise.all([
    usageByDay(scope),
    usageBy(scope, 'model'),
    cacheBy(scope, 'key'),
    key.kind === 'admin' ? null : controlsSection(p, { kind: 'key', key }, `/dashboard/keys/${key.id}`),
  ]);
  const tables = [
    usageTable('per-day', 'Per day', 'Day', days),
    usageTable('per-model', 'Per model', 'Model', models),
  ];
  const body = (
    <>
      {flash && <SecretOnce {...flash} />}
      <dl class="facts">
        <div>
          <dt>Id</dt>
          <dd>{key.id}</dd>
        </div>
        <div>
          <dt>Hint</dt>
          <dd>{key.hint}</dd>
        </div>
        <div>
          <dt>Kind</dt>
          <dd>{key.kind}</dd>
        </div>
        <div>
          <dt>Status</dt>
          <dd>{key.status}</dd>
        </div>
        <div>
          <dt>Scope</dt>
          <dd>{scopeOf(key, new Map())}</dd>
        </div>
        <div>
          <dt>Last used</dt>
          <dd>{when(key.lastUsedAt)}</dd>
        </div>
        {key.kind !== 'admin' && (
          <div>
            <dt>Resumable streams</dt>
            <dd>{key.resumableStreams ? 'on' : 'off (a request may ask with keygate-resumable: true)'}</dd>
          </div>
        )}
        <div>
          <dt>Created</dt>
          <dd>{when(key.createdAt)}</dd>
        </div>
      </dl>
      {rights && key.status === 'active' && (
        <KeyActions
          csrf={viewer.csrf}
          base={`/dashboard/keys/${key.id}`}
          query={queryOf(p.state)}
          rotate={rights.canRotate}
          resumable={key.kind === 'admin' ? null : key.resumableStreams}
        />
      )}
      <p>
        <a href={p.href('/dashboard/calls', { key: key.id })}>This key's calls</a>
      </p>
      <CacheFacts figures={cacheTotal(cache)} />
      {controls}
      {tables.map((t) => (
        <TableView table={t} csvHref={p.csv(t.id)} />
      ))}
    </>
  );
  return { title: `Key: ${key.name}`, section: '/dashboard/keys', tables, body };
}
