/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { usageSummary } from '../../reports/usage-summary';
import { TableView } from '../components/table-view';
import type { DashboardDeps } from '../env';
import type { Figures, UsageLine } from '../data';
import { when, type Table } from '../table';
import type { Range } from '../view-state';
import { usageTable } from './page';

/** The operator's cross-account view: accounts, plans, and usage across accounts; each account opens read-only. */
export async function operatorPage(
  deps: DashboardDeps,
  range: Range,
  csv: (id: string) => string,
  open: (accountId: string) => string,
) {
  const q = { by: 'account' as const, starting_at: range.from, ending_at: range.to };
  const [accounts, plans, summary, priced] = await Promise.all([
    deps.store.accounts.list({}, { limit: 1000 }),
    deps.store.accounts.plans(),
    usageSummary(deps.store, null, q, deps.clock()),
    deps.store.usage.fromRollups({
      accountId: null,
      from: range.from,
      to: range.to,
      bucketSeconds: null,
      groupBy: ['account_id', 'model'],
      excludeTestKeys: true,
      pricing: true,
    }),
  ]);
  const cost = new Map<string, number>();
  for (const r of priced) {
    const c = deps.prices.rowCost(r);
    if (c.priced) cost.set(r.account_id!, (cost.get(r.account_id!) ?? 0) + c.cents);
  }
  const lines: UsageLine[] = summary.data.map((row) => {
    const r = row as Record<string, unknown> & Figures;
    return {
      id: r.account_id as string,
      label: (r.account_name as string | null) ?? (r.account_id as string),
      figures: r,
      costCents: cost.get(r.account_id as string) ?? 0,
    };
  });
  const tables: Table[] = [
    usageTable('usage-by-account', 'Usage by account', 'Account', lines, (l) => (l.id ? open(l.id) : null)),
    {
      id: 'accounts',
      caption: 'Accounts',
      columns: ['Account', 'Id', 'Plan', 'Status', 'Time zone', 'Trial ends', 'Created'].map((label) => ({
        label,
      })),
      rows: accounts.rows.map((a) => [
        { text: a.name, href: open(a.id) },
        a.id,
        a.planId,
        a.status,
        a.timeZone,
        when(a.trialEndsAt),
        when(a.createdAt),
      ]),
    },
    {
      id: 'plans',
      caption: 'Plans',
      columns: [
        { label: 'Plan' },
        { label: 'Price' },
        { label: 'Per seat' },
        { label: 'Seats' },
        { label: 'Trial days', numeric: true },
      ],
      rows: plans.map((p) => [
        p.name,
        `${(p.priceCents / 100).toFixed(2)} ${p.currency}`,
        p.perSeat ? 'yes' : 'no',
        p.maxSeats == null ? 'unlimited' : String(p.maxSeats),
        String(p.trialDays),
      ]),
    },
  ];
  return {
    tables,
    body: (
      <>
        {tables.map((t) => (
          <TableView table={t} csvHref={csv(t.id)} />
        ))}
      </>
    ),
  };
}
