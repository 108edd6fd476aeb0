import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { GatewayError } from '../lib/errors';
import type { SecretBox } from '../lib/secret-box';
import { insertAlertEvent } from '../budgets/alert-queries';
import type { BillingStore } from './install';
import type { ReconciliationRecord } from './reconciliation-queries';
import { rowCounts, type Prices } from '../pricing/prices';

/** Drift past this share of the provider's figure raises an alert event. */
export const DRIFT_THRESHOLD_PERCENT = 0.5;

const DAY = 86_400_000;

export interface ReconcileDeps {
  store: Pick<BillingStore, 'db' | 'accounts' | 'usage' | 'reconciliations'>;
  box: SecretBox;
  /** The gateway's prices: Keygate's side of the comparison. */
  prices: Prices;
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

/**
 * One provider API key's day: tokens from the provider's usage report grouped by `api_key_id`
 * beside Keygate's calls made with that key. The provider's cost report has no per-key grouping
 * (https://platform.claude.com/docs/en/api/admin-api/usage-cost/get-cost-report, read
 * 2026-11-25), so a key's line compares tokens; Keygate's cents are shown beside them.
 */
export interface KeyDriftLine {
  day: string;
  api_key_id: string | null;
  /** The provider's name and hint for the key; Keygate's own key is marked. */
  api_key_label: string;
  keygate_key: boolean;
  provider: { tokens: number };
  keygate: { tokens: number; cents: number; unpriced: boolean };
  token_drift: number;
  likely_cause: string | null;
}

type Json = Record<string, any>;

/**
 * One of the provider's Admin API reports (or its key list), every page of it: reports page with
 * `has_more` / `next_page` (sent back as `page`), the key list with `has_more` / `last_id`
 * (sent back as `after_id`). Shapes: platform.claude.com/docs/en/api/admin-api/usage-cost/
 * get-cost-report and .../apikeys/list-api-keys, read 2026-11-25.
 */
async function providerReport(
  deps: ReconcileDeps,
  adminKey: string,
  path: string,
  from: Date | null,
  to: Date | null,
  groupBy: string | null = 'model',
): Promise<Json> {
  const base =
    from && to
      ? `starting_at=${from.toISOString()}&ending_at=${to.toISOString()}&bucket_width=1d${groupBy ? `&group_by[]=${groupBy}` : ''}`
      : 'limit=1000';
  const data: Json[] = [];
  let cursor = '';
  for (let pages = 0; pages < 100; pages++) {
    const res = await (deps.fetch ?? fetch)(`${deps.upstreamUrl}/v1/organizations/${path}?${base}${cursor}`, {
      headers: { 'x-api-key': adminKey, 'anthropic-version': '2023-06-01' },
    });
    if (!res.ok) throw new Error(`the provider's ${path} answered ${res.status}`);
    const body = (await res.json()) as Json;
    data.push(...(body.data ?? []));
    const next = from ? body.next_page : body.last_id;
    if (!body.has_more || !next) break;
    cursor = from ? `&page=${encodeURIComponent(next)}` : `&after_id=${encodeURIComponent(next)}`;
  }
  return { data };
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
  const account = await deps.store.accounts.get(accountId);
  const providerKey = account?.providerKeySealed
    ? deps.box.open(account.providerKeySealed, { purpose: 'provider-key', row: accountId })
    : null;
  const [usage, cost, byKey, keyList, ours] = await Promise.all([
    providerReport(deps, adminKey, 'usage_report/messages', from, to),
    // The provider's cost report groups by workspace_id or description; a description row names its model.
    providerReport(deps, adminKey, 'cost_report', from, to, 'description'),
    providerReport(deps, adminKey, 'usage_report/messages', from, to, 'api_key_id'),
    providerReport(deps, adminKey, 'api_keys', null, null),
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
    const tokens = tokenTotal(c);
    if (tokens === 0 && c.web_search_requests === 0) continue;
    const l = line(row.bucket!.toISOString().slice(0, 10), row.model);
    const cost = deps.prices.rowCost(row);
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
  // Keygate's usage hour by hour (priced per model), for the provider key in force each hour.
  const [hourly, history] = await Promise.all([
    deps.store.usage.fromRollups({
      accountId,
      from,
      to,
      bucketSeconds: 3600,
      groupBy: ['model'],
      excludeTestKeys: true,
      pricing: true,
    }),
    deps.store.reconciliations.keyHistory(accountId),
  ]);
  const byHour = new Map<number, KeygateHour>();
  for (const row of hourly) {
    const hour = row.bucket!.getTime();
    const h = byHour.get(hour) ?? { hour, tokens: 0, cents: 0, unpriced: false };
    const cost = deps.prices.rowCost(row);
    h.tokens += tokenTotal(rowCounts(row));
    if (cost.priced) h.cents += cost.cents;
    else h.unpriced = true;
    byHour.set(hour, h);
  }
  const hours = [...byHour.values()];
  const keysHeld = history.length
    ? history
    : providerKey
      ? [{ since: new Date(0), head: providerKey.slice(0, 16), tail: providerKey.slice(-4) }]
      : [];
  const byApiKey = keyLines(byKey, keyList.data ?? [], keysHeld, hours);
  const result = {
    threshold_percent: thresholdPercent,
    provider_cents: round(providerCents),
    keygate_cents: round(keygateCents),
    lines: drift,
    by_api_key: byApiKey,
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

/** Every token of a rollup row, as the provider's usage report adds them up. */
const tokenTotal = (c: ReturnType<typeof rowCounts>) =>
  c.uncached_input_tokens +
  c.output_tokens +
  c.cache_read_input_tokens +
  c['cache_creation.ephemeral_5m_input_tokens'] +
  c['cache_creation.ephemeral_1h_input_tokens'];

/** Does the provider's partial hint (`sk-ant-api03-R2D...igAA`) show this key's first and last characters? */
const hintMatches = (hint: string, print: { head: string; tail: string }) => {
  const [head, tail] = hint.split('...');
  return (
    !!head &&
    !!tail &&
    (print.head.startsWith(head) || head.startsWith(print.head)) &&
    (print.tail.endsWith(tail) || tail.endsWith(print.tail))
  );
};

interface KeygateHour {
  hour: number;
  tokens: number;
  cents: number;
  unpriced: boolean;
}

/**
 * Per day × provider API key. Keygate's calls go out with the account's provider key of the
 * time: each hour of Keygate's usage sits on the key in force at the start of that hour (from
 * `provider_key_history`; before its first change, the first key; an account older than the
 * history, its current key), found in the provider's key list by its partial hint. Any other
 * key's tokens were spent outside Keygate.
 */
function keyLines(
  report: Json,
  keys: { id: string; name?: string; partial_key_hint?: string }[],
  history: { since: Date; head: string; tail: string }[],
  hours: KeygateHour[],
): KeyDriftLine[] {
  const idOf = (print: { head: string; tail: string }) =>
    keys.find((k) => k.partial_key_hint && hintMatches(k.partial_key_hint, print))?.id ?? null;
  const held = history.map((h) => ({ since: h.since.getTime(), id: idOf(h) }));
  const currentId = held.at(-1)?.id ?? null;
  const heldIds = new Set(held.map((h) => h.id).filter((id) => id !== null));
  const keyAt = (hour: number) => {
    let id = held[0]?.id ?? null;
    for (const h of held) if (h.since <= hour) id = h.id;
    return id;
  };
  const label = (id: string | null) => {
    const k = keys.find((x) => x.id === id);
    const name = k ? `${k.name ?? k.id} (${k.partial_key_hint ?? id})` : (id ?? 'no key id');
    if (id === null || !heldIds.has(id)) return name;
    return id === currentId ? `${name}: Keygate's provider key` : `${name}: Keygate's earlier provider key`;
  };
  const lines = new Map<string, KeyDriftLine>();
  const line = (day: string, id: string | null) => {
    const k = JSON.stringify([day, id]);
    let l = lines.get(k);
    if (!l) {
      l = {
        day,
        api_key_id: id,
        api_key_label: label(id),
        keygate_key: id !== null && heldIds.has(id),
        provider: { tokens: 0 },
        keygate: { tokens: 0, cents: 0, unpriced: false },
        token_drift: 0,
        likely_cause: null,
      };
      lines.set(k, l);
    }
    return l;
  };
  for (const b of report.data)
    for (const r of b.results)
      line(b.starting_at.slice(0, 10), r.api_key_id ?? null).provider.tokens += tokensOf(r);
  for (const h of hours) {
    if (h.tokens === 0 && !h.unpriced) continue;
    const l = line(new Date(h.hour).toISOString().slice(0, 10), keyAt(h.hour));
    l.keygate.tokens += h.tokens;
    l.keygate.cents = round(l.keygate.cents + h.cents);
    l.keygate.unpriced ||= h.unpriced;
  }
  for (const l of lines.values()) {
    l.token_drift = l.keygate.tokens - l.provider.tokens;
    l.likely_cause =
      l.token_drift === 0
        ? null
        : !l.keygate_key
          ? l.api_key_id === null && l.keygate.tokens > 0
            ? "Keygate's provider key is not in the provider's key list (another organization's key, or a hint that no longer matches)"
            : 'calls made with a provider key Keygate does not hold: spent outside Keygate'
          : l.token_drift < 0
            ? "calls made with Keygate's provider key outside Keygate, or call records lost"
            : 'Keygate counted tokens the provider did not bill (records written twice, or a test key)';
  }
  return [...lines.values()].sort(
    (a, b) =>
      a.day.localeCompare(b.day) ||
      Number(b.keygate_key) - Number(a.keygate_key) ||
      String(a.api_key_id).localeCompare(String(b.api_key_id)),
  );
}

/** The provider's Admin API keys: `sk-ant-admin01-…`. */
export const ADMIN_KEY_PATTERN = /^sk-ant-admin\d*-[A-Za-z0-9_-]+$/;

/** Seals and keeps the account's provider Admin API key (null forgets it); returns its hint. */
export async function saveAdminKey(
  deps: Pick<ReconcileDeps, 'store' | 'box'>,
  accountId: string,
  key: string | null,
): Promise<string | null> {
  const hint = key ? `${key.slice(0, 13)}…${key.slice(-4)}` : null;
  const sealed = key ? deps.box.seal(key, { purpose: 'provider-admin-key', row: accountId }) : null;
  await deps.store.reconciliations.setAdminKey(accountId, sealed, hint);
  return hint;
}

/**
 * A run asked for by a person (the account API or the dashboard's button): default yesterday
 * (UTC), at most 31 days, and every refusal in the provider's error shape.
 */
export async function reconcileOnDemand(
  deps: Omit<ReconcileDeps, 'upstreamUrl'> & { upstreamUrl?: string | undefined; clock: () => number },
  accountId: string,
  range: { from?: Date | undefined; to?: Date | undefined },
): Promise<ReconciliationRecord> {
  if (!deps.upstreamUrl) throw new GatewayError('api_error', 'Reconciliation is not set up on this gateway.');
  if (!(await deps.store.reconciliations.adminKey(accountId)))
    throw new GatewayError(
      'invalid_request_error',
      'No provider Admin API key: PUT /v1/organizations/provider_admin_key first.',
    );
  const today = Math.floor(deps.clock() / DAY) * DAY;
  const from = range.from ?? new Date(today - DAY);
  const to = range.to ?? new Date(from.getTime() + DAY);
  if (to <= from || to.getTime() - from.getTime() > 31 * DAY)
    throw new GatewayError(
      'invalid_request_error',
      'ending_at: after starting_at, and at most 31 days later.',
    );
  try {
    return await reconcile({ ...deps, upstreamUrl: deps.upstreamUrl }, accountId, from, to);
  } catch (error) {
    throw new GatewayError(
      'api_error',
      `The provider's reports could not be read: ${(error as Error).message}`,
    );
  }
}

export interface DailyReconciliation {
  /** Runs yesterday's reconciliation (UTC) for every account with an Admin API key whose day no instance has claimed; returns the accounts this instance ran. */
  runDue(): Promise<string[]>;
  stop(): void;
}

/**
 * The daily job: yesterday (UTC) for every account with an Admin API key, checked every hour. Each (account, day) is claimed in the database first, so with several gateway
 * instances on one database exactly one runs it; a failed run gives its claim back.
 */
export function startDailyReconciliation(
  deps: ReconcileDeps,
  clock: () => number,
  onError: (error: unknown, accountId: string) => void,
): DailyReconciliation {
  const instance = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const runDue = async () => {
    const today = Math.floor(clock() / DAY) * DAY;
    const day = new Date(today - DAY).toISOString().slice(0, 10);
    const ran: string[] = [];
    for (const id of await deps.store.reconciliations.accountsWithAdminKey()) {
      if (!(await deps.store.reconciliations.claimDay(id, day, instance))) continue;
      try {
        await reconcile(deps, id, new Date(today - DAY), new Date(today));
        ran.push(id);
      } catch (error) {
        await deps.store.reconciliations.releaseDay(id, day, instance).catch(() => {});
        onError(error, id);
      }
    }
    return ran;
  };
  const tick = () => void runDue().catch((e) => onError(e, ''));
  const timer = setInterval(tick, 60 * 60_000);
  timer.unref();
  return { runDue, stop: () => clearInterval(timer) };
}
