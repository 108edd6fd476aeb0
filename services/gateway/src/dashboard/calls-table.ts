import type { CallRecord } from '../lib/call-record';
import { callCost, figureCounts, figureDims } from '../pricing/prices';
import { usageFigures } from '../usage/usage';
import { localTime } from '../reports/time-zone';
import { num, usd, type Column, type Table } from './table';

const columns = (zone: string): Column[] => [
  { label: `Time (${zone})` },
  { label: 'Key' },
  { label: 'Model' },
  { label: 'Group' },
  { label: 'Status' },
  ...[
    'Latency ms',
    'TTFB ms',
    'Retries',
    'Uncached input',
    'Cache writes 5m',
    'Cache writes 1h',
    'Cache reads',
    'Output',
    'Web searches',
    'Cost (USD)',
  ].map((label) => ({ label, numeric: true })),
];

/** Calls one per row: status, latency, time to first byte, and the usage each one was served with. */
export function callsTable(
  id: string,
  caption: string,
  calls: CallRecord[],
  keyNames: Map<string, string>,
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
      const cost = callCost(r.model, figureCounts(u), figureDims(u, r.createdAt));
      const status = `${r.status}${r.errorType ? ` ${r.errorType}` : ''}${r.partial ? ' (partial)' : ''}`;
      return [
        localTime(zone, r.createdAt.getTime()),
        r.keyId
          ? { text: keyNames.get(r.keyId) ?? r.keyId, href: href(`/dashboard/keys/${r.keyId}`, {}) }
          : '(none)',
        r.model ?? '',
        r.groupId
          ? { text: r.groupId, href: href(`/dashboard/groups/${encodeURIComponent(r.groupId)}`, {}) }
          : '',
        status,
        num(r.latencyMs),
        r.ttfbMs == null ? '' : num(r.ttfbMs),
        num(r.retryCount),
        num(u.inputTokens),
        num(u.cacheCreation5mTokens),
        num(u.cacheCreation1hTokens),
        num(u.cacheReadInputTokens),
        num(u.outputTokens),
        num(u.webSearchRequests),
        cost.priced ? usd(cost.cents) : 'unpriced',
      ];
    }),
  };
}
