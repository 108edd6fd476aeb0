import {
  acceptedEdits,
  claudeCodeOutcomes,
  decidedEdits,
  type Outcome,
} from '../../reports/claude-code-outcomes';
import type { SessionLine } from '../../reports/claude-code-sessions';
import { num, pct, usd, type Cell, type Table } from '../table';
import type { PageCtx } from './page';

interface DayLine {
  day: string;
  /** A member id, or the key id of calls made with a key of no member. */
  actor: string;
  sessions: Set<string>;
  cents: number;
  outcome: Outcome | null;
}

const perUnit = (cents: number, n: number) => (n > 0 ? usd(cents / n) : '—');
const told = (o: Outcome | null, v: (o: Outcome) => number) => (o ? num(v(o)) : '—');

/**
 * Per member and UTC day: sessions, the cost of the metered calls, and the outcomes the
 * member's Claude Code reported (lines, commits, pull requests, edit decisions), with cost per
 * pull request and per accepted edit.
 */
export async function outcomesTable(
  p: PageCtx,
  sessions: SessionLine[],
  memberId: string | null,
): Promise<{ table: Table; emails: Map<string, string> }> {
  const { deps, viewer, range } = p;
  const outcomes = await claudeCodeOutcomes(deps.store, viewer.accountId, range.from, range.to, memberId);
  const lines = new Map<string, DayLine>();
  const line = (day: string, actor: string) => {
    const key = `${day}|${actor}`;
    const l = lines.get(key) ?? { day, actor, sessions: new Set<string>(), cents: 0, outcome: null };
    lines.set(key, l);
    return l;
  };
  for (const s of sessions) {
    const l = line(s.date.slice(0, 10), s.user_id ?? s.api_key_id ?? '');
    if (s.session_id) l.sessions.add(s.session_id);
    l.cents += s.cost_cents;
  }
  for (const o of outcomes.values()) line(o.day, o.member_id).outcome = o;
  const emails = await deps.store.members.emails(viewer.accountId, [
    ...new Set([...lines.values()].map((l) => l.actor).filter((a) => a.startsWith('user_'))),
  ]);
  const rows: Cell[][] = [...lines.values()]
    .sort((a, b) => a.day.localeCompare(b.day) || a.actor.localeCompare(b.actor))
    .map((l) => {
      const o = l.outcome;
      const accepted = o ? acceptedEdits(o) : 0;
      return [
        l.day,
        emails.get(l.actor) ?? l.actor,
        num(Math.max(l.sessions.size, o?.sessions ?? 0, o?.sessions_seen ?? 0)),
        usd(l.cents),
        told(o, (x) => x.lines_added),
        told(o, (x) => x.lines_removed),
        told(o, (x) => x.commits),
        told(o, (x) => x.pull_requests),
        o ? `${pct(accepted, decidedEdits(o))} of ${num(decidedEdits(o))}` : '—',
        o ? perUnit(l.cents, o.pull_requests) : '—',
        o ? perUnit(l.cents, accepted) : '—',
      ];
    });
  const table: Table = {
    id: 'outcomes',
    caption: `Claude Code per member and day, ${range.label}`,
    columns: [
      { label: 'Day' },
      { label: 'Member' },
      { label: 'Sessions', numeric: true },
      { label: 'Cost (USD)', numeric: true },
      { label: 'Lines added', numeric: true },
      { label: 'Lines removed', numeric: true },
      { label: 'Commits', numeric: true },
      { label: 'Pull requests', numeric: true },
      { label: 'Edits accepted', numeric: true },
      { label: 'Per PR (USD)', numeric: true },
      { label: 'Per accepted edit (USD)', numeric: true },
    ],
    rows,
    empty: 'No Claude Code calls or telemetry in this period.',
  };
  return { table, emails };
}
