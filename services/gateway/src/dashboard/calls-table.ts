import type { CallRecord } from '../lib/call-record';
import { BATCH_ENDPOINT, SESSION_ENDPOINT, figureCounts, figureDims, type Prices } from '../pricing/prices';
import type { Store } from '../store';
import { usageFigures } from '../usage/usage';
import { localTime } from '../reports/time-zone';
import { num, usd, type Column, type Table } from './table';

// What a reader looks for first (who, which key, what it cost) is on the row; the group, the
// token detail and the timings open on it (Details), so the log fits a 1366 px screen.
const columns = (zone: string): Column[] => [
  { label: `Time (${zone})` },
  { label: 'Member' },
  { label: 'Key' },
  { label: 'Model' },
  { label: 'Endpoint' },
  { label: 'Status', wrap: true },
  { label: 'Cost (USD)', numeric: true },
  { label: 'Group', detail: true },
  ...[
    'Uncached input',
    'Cache writes 5m',
    'Cache writes 1h',
    'Cache reads',
    'Output',
    'Web searches',
    'Latency ms',
    'TTFB ms',
    'Retries',
  ].map((label) => ({ label, numeric: true, detail: true })),
];

/** Endpoints the call log names by a word rather than a method and path. */
const NAMED = new Map([
  ['messages', 'Messages'],
  ['count_tokens', 'Count tokens'],
  ['models', 'Models'],
  [BATCH_ENDPOINT, 'Messages (batch)'],
  [SESSION_ENDPOINT, 'Sessions: usage'],
]);
// The provider's other APIs are logged as `METHOD /v1/<family>/{id}/…` (surface/call.ts).
const FAMILIES = [
  ['/v1/files', 'Files'],
  ['/v1/messages/batches', 'Batches'],
  ['/v1/skills', 'Skills'],
  ['/v1/sessions', 'Sessions'],
  ['/v1/agents', 'Agents'],
  ['/v1/environments', 'Environments'],
] as const;
const ACTIONS = new Map([
  ['POST', 'create'],
  ['GET', 'list'],
  ['GET /{id}', 'get'],
  ['POST /{id}', 'update'],
  ['DELETE /{id}', 'delete'],
  ['GET /{id}/content', 'download'],
  ['POST /{id}/cancel', 'cancel'],
  ['GET /{id}/results', 'results'],
  ['POST /{id}/events', 'send events'],
  ['GET /{id}/events', 'events'],
  ['GET /{id}/events/stream', 'event stream'],
  ['POST /{id}/versions', 'create version'],
  ['GET /{id}/versions', 'list versions'],
  ['GET /{id}/versions/{id}', 'get version'],
  ['DELETE /{id}/versions/{id}', 'delete version'],
]);

/**
 * What a call was, in a few words (`Files: upload`), so a call that has no model and costs
 * nothing does not read as a failed Messages call; an endpoint not known here shows as logged.
 */
export function endpointLabel(endpoint: string): string {
  const named = NAMED.get(endpoint);
  if (named) return named;
  const [method, path = ''] = endpoint.split(' ', 2);
  const family = FAMILIES.find(([base]) => path === base || path.startsWith(`${base}/`));
  if (!family) return endpoint;
  const what = `${method} ${path.slice(family[0].length)}`.trim();
  const action = family[1] === 'Files' && what === 'POST' ? 'upload' : ACTIONS.get(what);
  return action ? `${family[1]}: ${action}` : endpoint;
}

/** Names of the keys and members that made `calls`, to label their rows. */
export interface CallNames {
  keys: Map<string, string>;
  members: Map<string, string>;
}

export async function callNames(
  store: Pick<Store, 'keys' | 'members'>,
  accountId: string,
  calls: CallRecord[],
): Promise<CallNames> {
  const ids = (pick: (c: CallRecord) => string | null) => [
    ...new Set(calls.map(pick).filter((id): id is string => !!id)),
  ];
  const [keys, members] = await Promise.all([
    store.keys.names(
      accountId,
      ids((c) => c.keyId),
    ),
    store.members.emails(
      accountId,
      ids((c) => c.memberId),
    ),
  ]);
  return { keys, members };
}

/** Calls one per row: what was called, status, latency, time to first byte, and the usage each one was served with. */
export function callsTable(
  prices: Prices,
  id: string,
  caption: string,
  calls: CallRecord[],
  names: CallNames,
  href: (path: string, f: Record<string, string>) => string,
  zone: string,
): Table {
  return {
    id,
    caption,
    columns: columns(zone),
    empty: 'No calls match.',
    rows: calls.map((r) => {
      const u = usageFigures(r.usage, r.batch);
      const cost = prices.callCost(r.model, figureCounts(u), figureDims(u, r.createdAt));
      const status = `${r.status}${r.errorType ? ` ${r.errorType}` : ''}${r.refusal ? ` (refused by ${r.refusal})` : ''}${r.partial ? ' (partial)' : ''}`;
      return [
        localTime(zone, r.createdAt.getTime()),
        r.memberId
          ? {
              text: names.members.get(r.memberId) ?? r.memberId,
              href: href(`/dashboard/members/${r.memberId}`, {}),
            }
          : '(none)',
        r.keyId
          ? { text: names.keys.get(r.keyId) ?? r.keyId, href: href(`/dashboard/keys/${r.keyId}`, {}) }
          : '(none)',
        r.model ?? '',
        endpointLabel(r.endpoint),
        status,
        r.test ? `${usd(0)} (test key, not billed)` : cost.priced ? usd(cost.cents) : 'unpriced',
        r.groupId
          ? { text: r.groupId, href: href(`/dashboard/groups/${encodeURIComponent(r.groupId)}`, {}) }
          : '',
        num(u.inputTokens),
        num(u.cacheCreation5mTokens),
        num(u.cacheCreation1hTokens),
        num(u.cacheReadInputTokens),
        num(u.outputTokens),
        num(u.webSearchRequests),
        num(r.latencyMs),
        r.ttfbMs == null ? '' : num(r.ttfbMs),
        num(r.retryCount),
      ];
    }),
  };
}
