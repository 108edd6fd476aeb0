/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { DriftLine, KeyDriftLine } from '../../billing/reconcile';
import { GatewayError } from '../../lib/errors';
import { PostForm } from '../components/controls';
import { TableView } from '../components/table-view';
import { num, usd, when, type Table } from '../table';
import type { PageCtx, PageResult } from './page';

const DAY = 86_400_000;
const day = (d: Date) => d.toISOString().slice(0, 10);
const signed = (n: number, f: (n: number) => string) => (n > 0 ? `+${f(n)}` : f(n));

/** What the last run found, as the account API's `reconciliation` object has it. */
interface Result {
  threshold_percent: number;
  provider_cents: number;
  keygate_cents: number;
  lines: DriftLine[];
  by_api_key?: KeyDriftLine[];
}

const keygateUsd = (k: { cents: number; unpriced: boolean }) =>
  k.unpriced ? `${usd(k.cents)} (unpriced calls left out)` : usd(k.cents);

const driftCells = (l: DriftLine) => [
  num(l.provider.tokens),
  num(l.keygate.tokens),
  signed(l.token_drift, num),
  usd(l.provider.cents),
  keygateUsd(l.keygate),
  signed(l.cents_drift, usd),
  `${l.drift_percent.toFixed(2)}%`,
  l.likely_cause ?? 'none: the two agree',
];

const DRIFT_COLUMNS = [
  { label: 'Provider tokens', numeric: true },
  { label: 'Keygate tokens', numeric: true },
  { label: 'Token drift', numeric: true },
  { label: 'Provider (USD)', numeric: true },
  { label: 'Keygate (USD)', numeric: true },
  { label: 'Drift (USD)', numeric: true },
  { label: 'Drift', numeric: true },
  { label: 'Likely cause', wrap: true },
];

export interface ReconcileFlash {
  kind: 'saved' | 'forgotten' | 'ran';
}

const FLASH: Record<ReconcileFlash['kind'], string> = {
  saved: 'The provider Admin API key is saved (sealed); Keygate reconciles with it daily.',
  forgotten: 'The provider Admin API key is forgotten: no more daily reconciliation.',
  ran: 'Reconciled just now: the result is below.',
};

/**
 * Keygate's figures beside the provider's own Admin API reports, per UTC day × model and per
 * provider API key: the drift and its likely cause. Account admins only: the Admin API key is
 * set here, and "Reconcile now" runs the comparison that otherwise runs daily.
 */
export async function reconciliationPage(p: PageCtx, flash?: ReconcileFlash): Promise<PageResult> {
  const { deps, viewer } = p;
  if (viewer.kind !== 'admin')
    throw new GatewayError(
      'permission_error',
      'Only an account admin sees the reconciliation with the provider.',
    );
  const [key, latest] = await Promise.all([
    deps.billing.store.reconciliations.adminKey(viewer.accountId),
    deps.billing.store.reconciliations.latest(viewer.accountId),
  ]);
  const result = latest?.result as Result | undefined;
  const tables: Table[] = [
    {
      id: 'drift',
      caption: 'Drift per day and model (UTC days)',
      columns: [{ label: 'Day' }, { label: 'Model' }, ...DRIFT_COLUMNS],
      rows: (result?.lines ?? []).map((l) => [l.day, l.model ?? '(none)', ...driftCells(l)]),
      empty: latest ? 'Neither side has calls in this period.' : 'No reconciliation has run yet.',
    },
    {
      id: 'drift-by-key',
      caption: 'Tokens per day and provider API key (the provider reports no cost per key)',
      columns: [
        { label: 'Day' },
        { label: 'Provider API key', wrap: true },
        { label: 'Provider tokens', numeric: true },
        { label: 'Keygate tokens', numeric: true },
        { label: 'Token drift', numeric: true },
        { label: 'Keygate (USD)', numeric: true },
        { label: 'Likely cause', wrap: true },
      ],
      rows: (result?.by_api_key ?? []).map((l: KeyDriftLine) => [
        l.day,
        l.api_key_label,
        num(l.provider.tokens),
        num(l.keygate.tokens),
        signed(l.token_drift, num),
        keygateUsd(l.keygate),
        l.likely_cause ?? 'none: the two agree',
      ]),
      empty: latest ? 'Neither side has calls in this period.' : 'No reconciliation has run yet.',
    },
  ];
  const editable = !viewer.readOnly;
  // The last run's days, or yesterday (the daily job's day) before any run.
  const yesterday = new Date(Math.floor(deps.clock() / DAY) * DAY - DAY);
  const from = day(latest?.startingAt ?? yesterday);
  const through = day(latest ? new Date(latest.endingAt.getTime() - 1) : yesterday);
  const body = (
    <>
      {flash && (
        <p class="flash" role="status">
          {FLASH[flash.kind]}
        </p>
      )}
      <p class="lead">
        Keygate's tokens and costs beside the provider's own usage and cost reports (its Admin API), per UTC
        day. A drift past {result?.threshold_percent ?? 0.5}% raises a <code>reconciliation.drift</code>{' '}
        alert.
      </p>
      <dl class="facts" data-facts="reconciliation">
        <div>
          <dt>Provider Admin API key</dt>
          <dd data-fact="admin-key">{key ? key.hint : 'not set: reconciliation is off'}</dd>
        </div>
        <div>
          <dt>Last run</dt>
          <dd data-fact="ran-at">{latest ? when(latest.ranAt) : 'never'}</dd>
        </div>
        {latest && (
          <div>
            <dt>Period</dt>
            <dd data-fact="period">
              {day(latest.startingAt)} to {day(new Date(latest.endingAt.getTime() - 1))}
            </dd>
          </div>
        )}
        {latest && result && (
          <div>
            <dt>Provider / Keygate (USD)</dt>
            <dd data-fact="totals">
              {usd(result.provider_cents)} / {usd(result.keygate_cents)}
            </dd>
          </div>
        )}
        {latest && (
          <div>
            <dt>Drift</dt>
            <dd data-fact="drift">{latest.driftPercent.toFixed(2)}%</dd>
          </div>
        )}
      </dl>
      {editable && key && (
        <PostForm action="/dashboard/reconciliation" csrf={viewer.csrf} class="inline">
          <label>
            From (UTC day) <input type="date" name="from" value={from} required />
          </label>{' '}
          <label>
            Through <input type="date" name="through" value={through} required />
          </label>{' '}
          <button type="submit">Reconcile now</button>
        </PostForm>
      )}
      <TableView table={tables[0]!} csvHref={p.csv('drift')} />
      <TableView table={tables[1]!} csvHref={p.csv('drift-by-key')} />
      <p>
        Likely causes: tokens the provider billed that Keygate never saw are calls made with the provider key
        outside Keygate (or call records lost); equal tokens with different cents are a missing price or a
        billing dimension Keygate does not model.
      </p>
      {editable && (
        <div class="form-row">
          <details class="form-block" open={!key}>
            <summary>{key ? 'Replace the provider Admin API key' : 'Set the provider Admin API key'}</summary>
            <PostForm action="/dashboard/reconciliation/admin-key" csrf={viewer.csrf} class="stack">
              <label>
                Admin API key (<code>sk-ant-admin01-…</code>, optional; kept sealed, never shown again)
                <input name="admin_key" type="password" autocomplete="off" required maxlength={300} />
              </label>
              <button type="submit">Save key</button>
            </PostForm>
          </details>
          {key && (
            <PostForm action="/dashboard/reconciliation/admin-key/delete" csrf={viewer.csrf}>
              <button type="submit">Forget the key</button>
            </PostForm>
          )}
        </div>
      )}
    </>
  );
  return {
    title: 'Reconciliation with the provider',
    section: '/dashboard/reconciliation',
    tables,
    body,
    periodless: true,
  };
}
