/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { effectiveState, NO_ROW } from '../../billing/standing';
import { MarkPaidForm, SetTrialForm } from '../components/billing-forms';
import { TableView } from '../components/table-view';
import type { DashboardDeps } from '../env';
import type { Table } from '../table';

const day = (d: Date | null | undefined) => (d ? d.toISOString().slice(0, 10) : '');

/** The operator's billing view: every account's subscription as of now, and payments recorded by hand. */
export async function operatorBillingPage(deps: DashboardDeps, csrf: string, notice?: string) {
  const now = deps.clock();
  const [accounts, subscriptions] = await Promise.all([
    deps.store.accounts.list({}, { limit: 1000 }),
    deps.billing.store.subscriptions.all(),
  ]);
  const byAccount = new Map(subscriptions.map((s) => [s.accountId, s]));
  const tables: Table[] = [
    {
      id: 'subscriptions',
      caption: 'Subscriptions',
      columns: [
        'Account',
        'Id',
        'Plan',
        'State',
        'Calls',
        'Trial ends',
        'Paid until',
        'Period ends',
        'Paid by',
      ].map((label) => ({ label })),
      rows: accounts.rows.map((a) => {
        const s = byAccount.get(a.id);
        const e = effectiveState(s ?? { ...NO_ROW, trialEndsAt: a.trialEndsAt }, now, deps.billing.graceDays);
        const by = s?.stripeSubscriptionId ? 'Stripe' : s?.paidUntil ? 'operator' : '';
        return [
          a.name,
          a.id,
          a.planId,
          e.state,
          deps.billing.enforced === false
            ? 'allowed (billing off)'
            : e.block
              ? `refused (${e.block.replaceAll('_', ' ')})`
              : 'allowed',
          day(a.trialEndsAt),
          day(s?.paidUntil),
          day(s?.currentPeriodEnd),
          by,
        ];
      }),
      empty: 'No accounts yet.',
    },
  ];
  const body = (
    <>
      {notice && (
        <p class="banner" role="status">
          {notice}
        </p>
      )}
      <MarkPaidForm csrf={csrf} accounts={accounts.rows} today={day(new Date(now))} />
      <SetTrialForm csrf={csrf} accounts={accounts.rows} today={day(new Date(now))} />
      {tables.map((t) => (
        <TableView table={t} csvHref={`/dashboard/billing?format=csv&table=${t.id}`} />
      ))}
    </>
  );
  return {
    title: 'Billing (operator)',
    section: '/dashboard/billing',
    tables,
    body,
    periodless: true as const,
  };
}
