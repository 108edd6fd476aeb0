/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { effectiveReport, type EffectiveRow } from '../../budgets/effective';
import type { IncreaseRequestRecord, SpendLimitRecord } from '../../budgets/spend-limit-queries';
import { PeriodSelect, PostForm } from '../components/controls';
import { TableView } from '../components/table-view';
import { usd, when, type Table } from '../table';
import type { PageCtx, PageResult } from './page';

const dollars = (cents: number | null) => (cents === null ? 'no limit' : usd(cents));

function sourceText(l: SpendLimitRecord, groups: Map<string, string>): string {
  if (l.scopeType === 'organization') return 'organization default';
  if (l.scopeType === 'rbac_group') return `group ${groups.get(l.scopeId) ?? l.scopeId}`;
  return 'own limit';
}

/**
 * Spend limits (the provider's face of hard-capped budgets): each member's effective limit
 * and spend this period. A member asks for more here; an admin approves (writing the member's
 * own limit, on every instance within a second) or denies.
 */
export async function spendLimitsPage(p: PageCtx): Promise<PageResult> {
  const { deps, viewer } = p;
  const admin = viewer.kind === 'admin' && !viewer.readOnly;
  const mineOnly = viewer.kind === 'member' ? [viewer.memberId] : null;
  const [rows, requests, groups] = await Promise.all([
    effectiveReport(deps, viewer.accountId, { memberIds: mineOnly, periods: null }),
    deps.store.spendLimits.listRequests(
      viewer.accountId,
      { status: null, memberIds: mineOnly },
      { limit: 100 },
    ),
    deps.store.rbacGroups.list(viewer.accountId, { limit: 1000 }),
  ]);
  const groupNames = new Map(groups.rows.map((g) => [g.id, g.name]));
  const tables: Table[] = [
    {
      id: 'limits',
      caption:
        viewer.kind === 'member' ? 'Your spend limits this period' : 'Effective spend limits this period',
      columns: [
        { label: 'Member' },
        { label: 'Period' },
        { label: 'Limit (USD)', numeric: true },
        { label: 'Spent (USD)', numeric: true },
        { label: 'From' },
      ],
      rows: rows.map((r: EffectiveRow) => [
        r.email ?? `key ${r.name}`,
        r.period,
        dollars(r.amountCents),
        usd(r.spentCents),
        sourceText(r.source, groupNames),
      ]),
      empty: 'No spend limit applies.',
    },
    {
      id: 'requests',
      caption: 'Requests for a higher limit',
      columns: [
        { label: 'Request' },
        { label: 'Member' },
        { label: 'Period' },
        { label: 'Asked (USD)', numeric: true },
        { label: 'Reason', wrap: true },
        { label: 'Status' },
        { label: 'Asked at' },
      ],
      rows: requests.rows.map((r: IncreaseRequestRecord) => [
        r.id,
        r.memberEmail,
        r.period,
        dollars(r.requestedCents),
        r.reason ?? '',
        r.status,
        when(r.createdAt),
      ]),
      empty: 'No requests.',
    },
  ];
  const pending = requests.rows.filter((r) => r.status === 'pending');
  const body = (
    <>
      <p class="lead">
        Limits are in USD at list prices per member and period (UTC); a call that would pass one is refused
        with 429 before it reaches the provider.
      </p>
      <TableView table={tables[0]!} csvHref={p.csv('limits')} />
      {viewer.kind === 'member' && (
        <details class="form-block" open>
          <summary>Ask for a higher limit</summary>
          <PostForm action="/dashboard/spend-limits/request" csrf={viewer.csrf} class="stack">
            <PeriodSelect label="Period" />
            <label>
              New limit (USD) <input name="amount_usd" type="number" min="0" step="0.01" required />
            </label>
            <label>
              Reason <input name="reason" maxlength={500} />
            </label>
            <button type="submit">Ask for more</button>
          </PostForm>
        </details>
      )}
      <TableView table={tables[1]!} csvHref={p.csv('requests')} />
      {admin &&
        pending.map((r) => (
          <div class="form-row" id={`decide-${r.id}`}>
            <PostForm action="/dashboard/spend-limits/approve" csrf={viewer.csrf} class="inline">
              <input type="hidden" name="id" value={r.id} />
              <label>
                {`New ${r.period} limit for ${r.memberEmail} (USD)`}{' '}
                <input
                  name="amount_usd"
                  type="number"
                  min="0"
                  step="0.01"
                  required
                  value={r.requestedCents === null ? '' : (r.requestedCents / 100).toFixed(2)}
                />
              </label>
              <button type="submit">Approve</button>
            </PostForm>
            <PostForm action="/dashboard/spend-limits/deny" csrf={viewer.csrf} class="inline">
              <input type="hidden" name="id" value={r.id} />
              <button type="submit">{`Deny ${r.memberEmail}'s request`}</button>
            </PostForm>
          </div>
        ))}
    </>
  );
  return { title: 'Spend limits', section: '/dashboard/spend-limits', tables, body, periodless: true };
}
