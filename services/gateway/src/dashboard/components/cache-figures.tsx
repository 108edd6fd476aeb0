/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { FC } from 'hono/jsx';
import { type CacheBy, type CacheFigures, cacheLines, hitRate } from '../../reports/cache-report';
import { type ReportScope, reportFilters } from '../data';
import { type Cell, num, type Table, usd } from '../table';

/** Cache figures of a page's scope by member or key (reports/cache-report.ts). */
export function cacheBy(s: ReportScope, by: CacheBy): Promise<CacheFigures[]> {
  const f = reportFilters(s);
  return cacheLines(s.deps, {
    accountId: s.viewer.accountId,
    from: s.range.from,
    to: s.range.to,
    by,
    filters: { keyIds: f.api_key_ids, memberIds: f.user_ids, models: f.models, groupIds: f.group_ids },
  });
}

/** The lines summed into one (a member's or a key's page shows its whole scope). */
export function cacheTotal(lines: CacheFigures[]): CacheFigures {
  const t = {
    id: null,
    uncachedInputTokens: 0,
    cacheReadTokens: 0,
    cacheWrite5mTokens: 0,
    cacheWrite1hTokens: 0,
    savedCents: 0,
  };
  for (const l of lines) {
    t.uncachedInputTokens += l.uncachedInputTokens;
    t.cacheReadTokens += l.cacheReadTokens;
    t.cacheWrite5mTokens += l.cacheWrite5mTokens;
    t.cacheWrite1hTokens += l.cacheWrite1hTokens;
    t.savedCents += l.savedCents;
  }
  return { ...t, hitRate: hitRate(t) };
}

const rate = (r: number | null) => (r === null ? '–' : `${(r * 100).toFixed(1)}%`);

const cells = (f: CacheFigures): Cell[] => [
  rate(f.hitRate),
  num(f.cacheWrite5mTokens),
  num(f.cacheWrite1hTokens),
  num(f.cacheReadTokens),
  usd(f.savedCents),
];

/** A table of cache figures, one row per member or key, served as CSV like every table. */
export function cacheTable(
  id: string,
  caption: string,
  first: string,
  lines: CacheFigures[],
  head: (id: string | null) => Cell,
): Table {
  return {
    id,
    caption,
    columns: [
      { label: first },
      ...['Cache hit rate', 'Cache writes 5m', 'Cache writes 1h', 'Cache reads', 'Saved by reads (USD)'].map(
        (label) => ({ label, numeric: true }),
      ),
    ],
    rows: lines.map((l) => [head(l.id), ...cells(l)]),
    foot: lines.length > 1 ? ['Total', ...cells(cacheTotal(lines))] : undefined,
    empty: 'No calls in this period.',
  };
}

/** A member's or a key's prompt caching at a glance. */
export const CacheFacts: FC<{ figures: CacheFigures }> = ({ figures: f }) => (
  <section aria-labelledby="cache-title" data-cache>
    <h2 id="cache-title">Prompt caching</h2>
    <dl class="facts">
      <div>
        <dt>Cache hit rate</dt>
        <dd data-cache-hit-rate>{rate(f.hitRate)}</dd>
      </div>
      <div>
        <dt>Cache writes, 5 minutes</dt>
        <dd data-cache-writes-5m>{num(f.cacheWrite5mTokens)} tokens</dd>
      </div>
      <div>
        <dt>Cache writes, 1 hour</dt>
        <dd data-cache-writes-1h>{num(f.cacheWrite1hTokens)} tokens</dd>
      </div>
      <div>
        <dt>Cache reads</dt>
        <dd data-cache-reads>{num(f.cacheReadTokens)} tokens</dd>
      </div>
      <div>
        <dt>Saved by cache reads</dt>
        <dd data-cache-saved>${usd(f.savedCents)}</dd>
      </div>
    </dl>
    <p class="lead">
      Hit rate: cache reads out of every input token (uncached, written and read). Saved: what the reads would
      have cost at the model's input price, less what they cost at its cache-read price (live keys).
    </p>
  </section>
);
