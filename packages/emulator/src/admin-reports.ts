import { createHash } from 'node:crypto';
import { EmulatorError, invalid } from './errors';
import { jsonHeaders, sendError, sendJson, type Exchange } from './http';
import type { Ledger } from './ledger';
import { modelData } from './models';
import { listPriceCents } from './pricing';
import type { LedgerEntry } from './types';

const DAY = 86_400_000;

/** The provider's id for an API key: opaque and stable; here derived from the key. */
export function apiKeyId(key: string): string {
  return `apikey_${createHash('sha256').update(key).digest('hex').slice(0, 24)}`;
}

function keyOf(e: LedgerEntry): string | null {
  const key = e.headers['x-api-key'];
  if (key) return key;
  const auth = e.headers.authorization;
  return auth?.startsWith('Bearer ') ? auth.slice(7) : null;
}

interface Params {
  from: number;
  to: number;
  byModel: boolean;
  byKey: boolean;
  /** Day buckets a page (default 7, at most 31) and the first bucket of this page. */
  limit: number;
  offset: number;
}

/** The page token: the offset of the next day bucket, opaque to the caller. */
const pageToken = (offset: number) => `page_${Buffer.from(String(offset)).toString('base64url')}`;
function pageOffset(token: string | null): number {
  if (token === null) return 0;
  const n = Number(Buffer.from(token.replace(/^page_/, ''), 'base64url').toString());
  if (!token.startsWith('page_') || !Number.isSafeInteger(n) || n < 0)
    throw invalid('page: not a next_page token of this report');
  return n;
}

/**
 * Reports page by day buckets as the provider's do: `limit` buckets (default 7, at most 31 for
 * `1d`), `has_more` and a `next_page` token taken back as `page`.
 *
 * What each report groups by, as the provider documents it (read 2026-11-25):
 * https://platform.claude.com/docs/en/api/admin-api/usage-cost/get-cost-report (cost:
 * workspace_id, description) and .../get-messages-usage-report. A cost row grouped by
 * description names its model; this ledger's descriptions are one per model.
 */
const COST_GROUPS = ['workspace_id', 'description'];

function params(query: URLSearchParams, now: number, report: 'usage' | 'cost'): Params {
  const start = Date.parse(query.get('starting_at') ?? '');
  if (Number.isNaN(start)) throw invalid('starting_at: Field required (an RFC 3339 timestamp)');
  const endRaw = query.get('ending_at');
  const end = endRaw === null ? now : Date.parse(endRaw);
  if (Number.isNaN(end) || end <= start) throw invalid('ending_at: must be a timestamp after starting_at');
  const width = query.get('bucket_width') ?? '1d';
  if (width !== '1d') throw invalid("bucket_width: the emulator's reports have day buckets only ('1d')");
  const groups = query.getAll('group_by[]');
  const bad = report === 'cost' ? groups.find((g) => !COST_GROUPS.includes(g)) : undefined;
  if (bad !== undefined)
    throw invalid(`group_by[]: '${bad}' is not an option of the cost report (${COST_GROUPS.join(', ')})`);
  const from = Math.floor(start / DAY) * DAY;
  const to = Math.ceil(end / DAY) * DAY;
  if ((to - from) / DAY > 31) throw invalid('at most 31 day buckets per request');
  const limit = Number(query.get('limit') ?? 7);
  if (!Number.isInteger(limit) || limit < 1 || limit > 31) throw invalid('limit: an integer from 1 to 31');
  return {
    limit,
    offset: pageOffset(query.get('page')),
    from,
    to,
    byModel: groups.includes(report === 'cost' ? 'description' : 'model'),
    byKey: groups.includes('api_key_id'),
  };
}

/** Billed Messages calls of the ledger: finished, answered, with usage. */
function billed(ledger: Ledger, p: Params): LedgerEntry[] {
  return ledger.entries.filter(
    (e) =>
      e.endpoint === 'messages' &&
      e.usage !== null &&
      e.endedAt !== null &&
      e.status === 200 &&
      e.startedAt >= p.from &&
      e.startedAt < p.to,
  );
}

const iso = (t: number) => new Date(t).toISOString().replace('.000Z', 'Z');

function buckets<T>(
  p: Params,
  entries: LedgerEntry[],
  sum: (rows: LedgerEntry[], model: string | null, key: string | null) => T,
) {
  const data = [];
  const first = p.from + p.offset * DAY;
  const last = Math.min(p.to, first + p.limit * DAY);
  for (let t = first; t < last; t += DAY) {
    const inDay = entries.filter((e) => e.startedAt >= t && e.startedAt < t + DAY);
    const groups = new Map<string, LedgerEntry[]>();
    for (const e of inDay) {
      const k = JSON.stringify([p.byModel ? e.model : null, p.byKey ? apiKeyId(keyOf(e) ?? '') : null]);
      groups.set(k, [...(groups.get(k) ?? []), e]);
    }
    const results = [...groups].map(([k, rows]) => {
      const [model, key] = JSON.parse(k) as [string | null, string | null];
      return sum(rows, model, key);
    });
    data.push({ starting_at: iso(t), ending_at: iso(t + DAY), results });
  }
  const more = last < p.to;
  return { data, has_more: more, next_page: more ? pageToken(p.offset + p.limit) : null };
}

/**
 * The Admin API's key list (`GET /v1/organizations/api_keys`): every key the ledger saw a call
 * with, in the provider's shape (id, a partial hint, status). One page: the emulator sees few keys.
 * Shape: https://platform.claude.com/docs/en/api/admin-api/apikeys/list-api-keys (read 2026-11-25).
 */
function apiKeyList(ledger: Ledger) {
  const served = ledger.entries.filter((e) => e.status === 200);
  const keys = [...new Set(served.map(keyOf).filter((k): k is string => !!k))];
  const data = keys.map((key) => ({
    id: apiKeyId(key),
    type: 'api_key',
    name: `Key ${key.slice(-4)}`,
    partial_key_hint: `${key.slice(0, 16)}...${key.slice(-4)}`,
    status: 'active',
    created_at: '2026-01-01T00:00:00Z',
    created_by: { id: 'user_emulator', type: 'user' },
    workspace_id: null,
  }));
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}

/**
 * The organization Admin API's `usage_report/messages` and `cost_report`, computed from the
 * ledger (what this "provider" served and bills), so a gateway can reconcile offline.
 */
export function handleAdminReport(
  ex: Exchange,
  ledger: Ledger,
  path: string,
  query: URLSearchParams,
  adminKey: string,
): void {
  if (ex.req.headers['x-api-key'] !== adminKey)
    return sendError(
      ex,
      new EmulatorError('authentication_error', 'invalid x-api-key: the Admin API takes an admin key'),
    );
  try {
    let body: unknown;
    const p =
      path === '/v1/organizations/api_keys'
        ? null
        : params(query, Date.now(), path === '/v1/organizations/cost_report' ? 'cost' : 'usage');
    const entries = p ? billed(ledger, p) : [];
    if (!p) {
      body = apiKeyList(ledger);
    } else if (path === '/v1/organizations/usage_report/messages') {
      body = buckets(p, entries, (rows, model, key) => {
        const total = (f: (e: LedgerEntry) => number) => rows.reduce((s, e) => s + f(e), 0);
        return {
          api_key_id: key,
          workspace_id: null,
          model,
          service_tier: null,
          context_window: null,
          uncached_input_tokens: total((e) => e.usage!.input_tokens),
          cache_creation: {
            ephemeral_5m_input_tokens: total((e) => e.usage!.cache_creation.ephemeral_5m_input_tokens),
            ephemeral_1h_input_tokens: total((e) => e.usage!.cache_creation.ephemeral_1h_input_tokens),
          },
          cache_read_input_tokens: total((e) => e.usage!.cache_read_input_tokens),
          output_tokens: total((e) => e.usage!.output_tokens),
          server_tool_use: {
            web_search_requests: total((e) => e.usage!.server_tool_use.web_search_requests),
          },
        };
      });
    } else if (path === '/v1/organizations/cost_report') {
      body = buckets(p, entries, (rows, model) => {
        const cents = rows.reduce(
          (s, e) => s + (listPriceCents(e.model!, e.usage!, new Date(e.startedAt)) ?? 0),
          0,
        );
        return {
          currency: 'USD',
          amount: (Math.round(cents * 1e6) / 1e6).toString(),
          workspace_id: null,
          description: model ? `${modelData(model)?.display_name ?? model} Usage` : null,
          cost_type: model ? 'tokens' : null,
          context_window: null,
          model,
          service_tier: null,
          token_type: null,
        };
      });
    } else {
      return sendError(ex, new EmulatorError('not_found_error', `Not found: GET ${path}`));
    }
    sendJson(ex, 200, JSON.stringify(body), jsonHeaders(ex.requestId, false));
  } catch (err) {
    sendError(
      ex,
      err instanceof EmulatorError ? err : new EmulatorError('api_error', (err as Error).message),
    );
  }
}
