/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { ALERT_EVENT_TYPES } from '../../alerts/events';
import { listBudgets, type BudgetWithProgress } from '../../budgets/service';
import type { DeliveryRecord, WebhookEndpointRecord } from '../../budgets/alert-queries';
import type { KeyRecord } from '../../tenancy/key-queries';
import type { MemberRecord } from '../../tenancy/account-queries';
import { BudgetForms, WebhookForms, WebhookSecret } from '../components/budget-forms';
import { TableView } from '../components/table-view';
import { usd, when, type Table } from '../table';
import type { PageCtx, PageResult } from './page';

export interface WebhookFlash {
  url: string;
  secret: string;
}

const day = (d: Date) => d.toISOString().slice(0, 10);

/** A budget's spent share as the page shows it (two decimals, as `listBudgets` rounds it). */
export const percentText = (p: number | null) => (p === null ? 'no limit' : `${p.toFixed(2)}%`);

function appliesTo(b: BudgetWithProgress, emails: Map<string, string>, keys: Map<string, KeyRecord>): string {
  if (b.scope === 'account') return 'the whole account';
  if (b.scope === 'user') return `member ${emails.get(b.targetId!) ?? b.targetId}`;
  return `key ${keys.get(b.targetId!)?.name ?? b.targetId}`;
}

function thresholdsText(b: BudgetWithProgress): string {
  return b.progress.thresholds
    .map((t) => `${t.percent}% ${t.crossedAt ? `crossed ${when(t.crossedAt)}` : 'not yet'}`)
    .join('; ');
}

function deliveriesText(ds: DeliveryRecord[]): [string, string, string, string] {
  const count = (s: DeliveryRecord['status']) => String(ds.filter((d) => d.status === s).length);
  const last = ds[0];
  const lastText = !last
    ? 'none yet'
    : `${last.type} ${last.status}${last.lastStatus ? ` (HTTP ${last.lastStatus})` : last.lastError ? ` (${last.lastError})` : ''} ${when(last.deliveredAt ?? last.createdAt)}`;
  return [count('delivered'), count('pending'), count('failed'), lastText];
}

/**
 * Budgets with their progress this period (the account API's `listBudgets`), and the alert
 * webhooks that hear of thresholds crossed. Admins create and delete both; a member sees the
 * budgets on themselves and their own keys, read-only.
 */
export async function budgetsPage(p: PageCtx, flash?: WebhookFlash): Promise<PageResult> {
  const { deps, viewer } = p;
  const admin = viewer.kind === 'admin';
  const [page, members, keys, endpoints] = await Promise.all([
    listBudgets(deps, viewer.accountId, { scope: null, targetId: null }, { limit: 1000 }),
    deps.store.members.list(viewer.accountId, { status: 'active' }, { limit: 1000 }),
    deps.store.keys.list(
      viewer.accountId,
      { memberId: viewer.kind === 'member' ? viewer.memberId : null },
      { limit: 1000 },
    ),
    admin ? deps.store.alerts.listEndpoints(viewer.accountId, { limit: 100 }) : null,
  ]);
  const emails = new Map(members.rows.map((m: MemberRecord) => [m.id, m.email]));
  const keyById = new Map(keys.rows.map((k) => [k.id, k]));
  const mine = (b: BudgetWithProgress) =>
    admin ||
    (b.scope === 'user' && b.targetId === viewer.memberId) ||
    (b.scope === 'api_key' && keyById.has(b.targetId!));
  const budgets = page.rows.filter(mine);
  const deliveries = new Map<string, DeliveryRecord[]>();
  for (const e of endpoints?.rows ?? []) deliveries.set(e.id, await deps.store.alerts.deliveries(e.id, 50));

  const tables: Table[] = [
    {
      id: 'budgets',
      caption: 'Budgets this period',
      // How far along and what happens at the limit first; the thresholds' history wraps.
      columns: [
        { label: 'Budget' },
        { label: 'Applies to' },
        { label: 'Used', numeric: true },
        { label: 'Spent (USD)', numeric: true },
        { label: 'Limit (USD)', numeric: true },
        { label: 'At the limit' },
        { label: 'Period' },
        { label: 'Resets on' },
        { label: 'Thresholds', wrap: true },
      ],
      rows: budgets.map((b) => [
        b.name,
        appliesTo(b, emails, keyById),
        percentText(b.progress.percent),
        usd(b.progress.spentCents),
        usd(b.limitCents),
        b.hardCap ? (b.progress.exhausted ? 'calls refused (429)' : 'calls refused') : 'alert only',
        b.period,
        day(b.progress.periodEnd),
        thresholdsText(b),
      ]),
      empty: admin ? 'No budgets yet: create one below.' : 'No budgets on you or your keys.',
    },
  ];
  if (endpoints) {
    tables.push({
      id: 'webhooks',
      caption: 'Alert webhooks (last 50 deliveries each)',
      columns: [
        { label: 'Endpoint' },
        { label: 'Events' },
        { label: 'Status' },
        { label: 'Delivered', numeric: true },
        { label: 'Pending', numeric: true },
        { label: 'Failed', numeric: true },
        { label: 'Last delivery' },
        { label: 'Created' },
      ],
      rows: endpoints.rows.map((e: WebhookEndpointRecord) => [
        e.url,
        e.events.join(', '),
        e.status,
        ...deliveriesText(deliveries.get(e.id) ?? []),
        when(e.createdAt),
      ]),
      empty: 'No webhook endpoints: alerts are only shown here.',
    });
  }
  const body = (
    <>
      {flash && <WebhookSecret {...flash} />}
      <p class="lead">
        Spend is in USD at list prices, from the same rollups as the reports; each budget resets at the start
        of its period (UTC).
      </p>
      <TableView table={tables[0]!} csvHref={p.csv('budgets')} />
      {admin && (
        <BudgetForms
          csrf={viewer.csrf}
          budgets={budgets}
          members={members.rows}
          keys={keys.rows.filter((k) => k.kind !== 'admin')}
        />
      )}
      {tables[1] && <TableView table={tables[1]} csvHref={p.csv('webhooks')} />}
      {admin && (
        <WebhookForms csrf={viewer.csrf} endpoints={endpoints?.rows ?? []} events={ALERT_EVENT_TYPES} />
      )}
    </>
  );
  return {
    title: 'Budgets and alerts',
    section: '/dashboard/budgets',
    tables,
    body,
    periodless: true,
    ...(flash ? { status: 201 as const } : {}),
  };
}
