import type { SecretBox } from '../lib/secret-box';
import { insertAlertEvent, type ReconciliationRecord, type Store } from '../store';
import { rowCost, rowCounts } from '../pricing/prices';

/** Drift past this share of the provider's figure raises an alert event. */
export const DRIFT_THRESHOLD_PERCENT = 0.5;

const DAY = 86_400_000;

export interface ReconcileDeps {
  store: Store;
  box: SecretBox;
  /** The provider's base URL (the emulator's in tests). */
  upstreamUrl: string;
  fetch?: typeof fetch;
}

interface Side {
  tokens: number;
  cents: number;
  unpriced: boolean;
}

export interface DriftLine {
  day: string;
  model: string | null;
  provider: { tokens: number; cents: number };
  keygate: { tokens: number; cents: number; unpriced: boolean };
  token_drift: number;
  cents_drift: number;
  drift_percent: number;
  likely_cause: string | null;
}

type Json = Record<string, any>;

async function providerReport(
  deps: ReconcileDeps,
  adminKey: string,
  path: string,
  from: Date,
  to: Date,
): Promise<Json> {
  const q = `starting_at=${from.toISOString()}&ending_at=${to.toISOString()}&bucket_width=1d&group_by[]=model`;
  const res = await (deps.fetch ?? fetch)(`${deps.upstreamUrl}/v1/organizations/${path}?${q}`, {
    headers: { 'x-api-key': adminKey, 'anthropic-version': '2023-06-01' },
  });
  if (!res.ok) throw new Error(`the provider's ${path} answered ${res.status}`);
  return (await res.json()) as Json;
}

const tokensOf = (r: Json) =>
  r.uncached_input_tokens +
  r.cache_creation.ephemeral_5m_input_tokens +
  r.cache_creation.ephemeral_1h_input_tokens +
  r.cache_read_input_tokens +
  r.output_tokens;

/** Why the two sides differ, from the shape of the difference. */
function causeOf(p: { tokens: number; cents: number }, k: Side): string | null {
  if (p.tokens === k.tokens && Math.abs(p.cents - k.cents) < 1e-6) return null;
  if (k.unpriced) return 'missing price: Keygate has no price for this model';
  if (p.tokens > k.tokens)
    return 'the provider billed tokens Keygate did not see: calls made with the provider key outside Keygate, or call records lost';
  if (p.tokens < k.tokens)
    return 'Keygate counted tokens the provider did not bill (records written twice, or a test key)';
  return 'same tokens, different cents: a price or a billing dimension Keygate does not model';
}

/**
 * Compares the provider's usage and cost reports (its Admin API, with the account's admin key)
 * with Keygate's rollups per day × model, stores the result, and raises `reconciliation.drift`
 * when the drift passes the threshold. Days are UTC, as the provider's report buckets are.
 */
export async function reconcile(
  deps: ReconcileDeps,
  accountId: string,
  from: Date,
  to: Date,
  thresholdPercent = DRIFT_THRESHOLD_PERCENT,
): Promise<ReconciliationRecord> {
  const key = await deps.store.reconciliations.adminKey(accountId);
  if (!key) throw new Error('no provider Admin API key for this account');
  const adminKey = deps.box.open(key.sealed, { purpose: 'provider-admin-key', row: accountId });
  const [usage, cost, ours] = await Promise.all([
    providerReport(deps, adminKey, 'usage_report/messages', from, to),
    providerReport(deps, adminKey, 'cost_report', from, to),
    deps.store.usage.fromRollups({
      accountId,
      from,
      to,
      bucketSeconds: DAY / 1000,
      groupBy: ['model'],
      excludeTestKeys: true,
      pricing: true,
    }),
  ]);
  const lines = new Map<string, { p: { tokens: number; cents: number }; k: Side }>();
  const line = (day: string, model: string | null) => {
    const id = JSON.stringify([day, model]);
    if (!lines.has(id))
      lines.set(id, { p: { tokens: 0, cents: 0 }, k: { tokens: 0, cents: 0, unpriced: false } });
    return lines.get(id)!;
  };
  for (const b of usage.data)
    for (const r of b.results) line(b.starting_at.slice(0, 10), r.model).p.tokens += tokensOf(r);
  for (const b of cost.data)
    for (const r of b.results) line(b.starting_at.slice(0, 10), r.model).p.cents += Number(r.amount);
  for (const row of ours) {
    const c = rowCounts(row);
    const tokens =
      c.uncached_input_tokens +
      c.output_tokens +
      c.cache_read_input_tokens +
      c['cache_creation.ephemeral_5m_input_tokens'] +
      c['cache_creation.ephemeral_1h_input_tokens'];
    if (tokens === 0 && c.web_search_requests === 0) continue;
    const l = line(row.bucket!.toISOString().slice(0, 10), row.model);
    const cost = rowCost(row);
    l.k.tokens += tokens;
    if (cost.priced) l.k.cents += cost.cents;
    else l.k.unpriced = true;
  }
  const drift: DriftLine[] = [...lines].map(([id, { p, k }]) => {
    const [day, model] = JSON.parse(id) as [string, string | null];
    const base = Math.max(p.cents, 1e-9);
    return {
      day,
      model,
      provider: { tokens: p.tokens, cents: round(p.cents) },
      keygate: { tokens: k.tokens, cents: round(k.cents), unpriced: k.unpriced },
      token_drift: k.tokens - p.tokens,
      cents_drift: round(k.cents - p.cents),
      drift_percent:
        p.cents === 0 && k.cents === 0
          ? p.tokens === k.tokens
            ? 0
            : 100
          : round((Math.abs(k.cents - p.cents) / base) * 100),
      likely_cause: causeOf(p, k),
    };
  });
  drift.sort((a, b) => a.day.localeCompare(b.day) || String(a.model).localeCompare(String(b.model)));
  const providerCents = drift.reduce((s, d) => s + d.provider.cents, 0);
  const keygateCents = drift.reduce((s, d) => s + d.keygate.cents, 0);
  const tokenGap = drift.some((d) => d.token_drift !== 0);
  const driftPercent =
    providerCents > 0
      ? round((Math.abs(keygateCents - providerCents) / providerCents) * 100)
      : tokenGap || keygateCents > 0
        ? 100
        : 0;
  const result = {
    threshold_percent: thresholdPercent,
    provider_cents: round(providerCents),
    keygate_cents: round(keygateCents),
    lines: drift,
  };
  const record = await deps.store.reconciliations.insert({
    accountId,
    startingAt: from,
    endingAt: to,
    driftPercent,
    result,
  });
  if (driftPercent > thresholdPercent || drift.some((d) => d.token_drift !== 0)) {
    await insertAlertEvent(deps.store.db.sql, {
      accountId,
      type: 'reconciliation.drift',
      data: {
        reconciliation_id: record.id,
        drift_percent: driftPercent,
        threshold_percent: thresholdPercent,
        causes: [...new Set(drift.map((d) => d.likely_cause).filter(Boolean))],
      },
      dedupKey: `reconciliation:${record.id}`,
    });
  }
  return record;
}

const round = (n: number) => Math.round(n * 1e6) / 1e6;

/** The daily job: yesterday (UTC) for every account with an Admin API key. Returns a stop function. */
export function startDailyReconciliation(
  deps: ReconcileDeps,
  clock: () => number,
  onError: (error: unknown, accountId: string) => void,
): () => void {
  let lastDay = '';
  const tick = async () => {
    const today = Math.floor(clock() / DAY) * DAY;
    const label = new Date(today).toISOString().slice(0, 10);
    if (label === lastDay) return;
    lastDay = label;
    for (const id of await deps.store.reconciliations.accountsWithAdminKey()) {
      await reconcile(deps, id, new Date(today - DAY), new Date(today)).catch((e) => onError(e, id));
    }
  };
  const timer = setInterval(() => void tick().catch((e) => onError(e, '')), 60 * 60_000);
  timer.unref();
  return () => clearInterval(timer);
}
