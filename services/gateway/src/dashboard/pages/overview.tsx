/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { SpendNotice, spendWarnings } from '../components/spend-notice';
import { accountWithPlan } from '../../accounts/service';
import { StackedChart } from '../components/chart';
import { SplitSwitch } from '../components/controls';
import { TableView } from '../components/table-view';
import { allTokens, dailySplit, total, usageBy, usageByDay, unpricedModels } from '../data';
import { UnpricedBanner } from '../components/unpriced-banner';
import type { Table } from '../table';
import { num, pct, usd } from '../table';
import { byCategory } from '../trouble';
import { SPLITS } from '../view-state';
import { usageTable, type PageCtx, type PageResult } from './page';

const FIELD_LINK = { member: '/dashboard/members/', key: '/dashboard/keys/', model: null } as const;

/** The combined view: totals, tokens and cost per day split by member, key or model, errors, costliest groups. */
export async function overviewPage(p: PageCtx): Promise<PageResult> {
  const { deps, viewer, scope, state, range } = p;
  const split = viewer.kind === 'member' && state.split === 'member' ? 'key' : state.split;
  const [days, splitLines, daily, groups, trouble, { account, plan }, seats, unpriced] = await Promise.all([
    usageByDay(scope),
    usageBy(scope, split),
    dailySplit(scope, split),
    usageBy(scope, 'group'),
    deps.store.dashboard.trouble(
      viewer.accountId,
      range.from,
      range.to,
      viewer.kind === 'member' ? viewer.memberId : null,
    ),
    accountWithPlan(deps, viewer.accountId),
    deps.store.members.countActive(viewer.accountId),
    unpricedModels(scope),
  ]);
  const warnings = await spendWarnings(
    deps,
    viewer.accountId,
    viewer.kind === 'member' ? viewer.memberId : null,
  );
  const sum = total(days);
  const calls = sum.figures.requests;
  const series = splitLines.map((l) => ({ id: String(l.id), label: l.label ?? l.id ?? '(none)' }));

  const tables: Table[] = [
    { ...usageTable('totals', `Totals, ${range.label}`, 'Period', [{ ...sum, label: range.label }]) },
    usageTable('by-split', `By ${SPLITS[split].toLowerCase()}`, SPLITS[split], splitLines, (l) =>
      FIELD_LINK[split] && l.id ? p.href(FIELD_LINK[split] + l.id) : null,
    ),
    usageTable('by-day', 'Per day', 'Day', days),
    {
      id: 'errors',
      caption: 'Errors and retries by category',
      columns: [
        { label: 'Category' },
        ...['Calls', 'Share of calls', 'Calls retried', 'Retries'].map((label) => ({ label, numeric: true })),
      ],
      rows: byCategory(trouble).map((t) => [
        t.category,
        num(t.calls),
        pct(t.calls, calls),
        num(t.retried),
        num(t.retries),
      ]),
    },
    usageTable(
      'costliest-groups',
      'Costliest request groups',
      'Group',
      groups
        .filter((g) => g.id)
        .sort((a, b) => b.costCents - a.costCents || b.figures.requests - a.figures.requests)
        .slice(0, 5),
      (l) => p.href(`/dashboard/groups/${encodeURIComponent(l.id!)}`),
    ),
  ];
  // With `KEYGATE_BILLING=off` every account counts as paid: no trial to count down.
  const trialDays =
    deps.billing.enforced !== false && account.trialEndsAt
      ? Math.ceil((account.trialEndsAt.getTime() - deps.clock()) / 86_400_000)
      : 0;
  const chartDays = range.days;
  const body = (
    <>
      <UnpricedBanner models={unpriced} />
      <SpendNotice warnings={warnings} own={viewer.kind === 'member'} />
      <aside class="banner" aria-label="Plan">
        <p>
          <strong>{account.name}</strong> · {plan.name} plan · {seats}
          {plan.maxSeats ? ` of ${plan.maxSeats}` : ''} seat{seats === 1 ? '' : 's'}
          {trialDays > 0 ? ` · free trial, ${trialDays} day${trialDays === 1 ? '' : 's'} left` : ''}
          {account.status !== 'active' ? ' · suspended' : ''}
        </p>
      </aside>
      <dl class="totals" aria-label="Totals for the period">
        <div>
          <dt>Cost (USD)</dt>
          <dd data-total="cost">{usd(sum.costCents)}</dd>
        </div>
        <div>
          <dt>Requests</dt>
          <dd data-total="requests">{num(sum.figures.requests)}</dd>
        </div>
        <div>
          <dt>Errors</dt>
          <dd data-total="errors">{num(sum.figures.errors)}</dd>
        </div>
        <div>
          <dt>Output tokens</dt>
          <dd data-total="output">{num(sum.figures.output_tokens)}</dd>
        </div>
      </dl>
      <TableView table={tables[0]!} csvHref={p.csv('totals')} />
      <SplitSwitch state={state} path="/dashboard" />
      <div class="charts">
        <StackedChart
          id="chart-tokens"
          caption={`Tokens per day by ${SPLITS[split].toLowerCase()} (all token types)`}
          days={chartDays}
          series={series}
          values={daily.tokens}
          format={num}
          minStep={1}
        />
        <StackedChart
          id="chart-cost"
          caption={`Cost per day by ${SPLITS[split].toLowerCase()} (USD)`}
          days={chartDays}
          series={series}
          values={daily.cost}
          format={usd}
          minStep={0.01}
        />
      </div>
      {tables.slice(1).map((t) => (
        <TableView table={t} csvHref={p.csv(t.id)} />
      ))}
      <p class="note">
        Calls in the period: {num(calls)}; token total across types: {num(allTokens(sum.figures))}.
      </p>
    </>
  );
  return { title: 'Overview', section: '/dashboard', tables, body };
}
