import type { OutcomeRow } from './telemetry-queries';
import type { Store } from '../store';

/** Accepted and rejected decisions of one edit tool. */
export interface Decisions {
  accepted: number;
  rejected: number;
}

/** What Claude Code reported of one member's day through its OpenTelemetry export. */
export interface Outcome {
  day: string;
  member_id: string;
  /** `claude_code.session.count`: sessions started. */
  sessions: number;
  /** Distinct session ids seen in the day's telemetry. */
  sessions_seen: number;
  lines_added: number;
  lines_removed: number;
  commits: number;
  pull_requests: number;
  /** `claude_code.code_edit_tool.decision` by tool (Edit, MultiEdit, Write, NotebookEdit). */
  edits: Record<string, Decisions>;
  /** The same by language (as Claude Code names it: TypeScript, Python, Plain text…). */
  edits_by_language: Record<string, Decisions>;
  active_seconds: number;
  /** Claude Code's own estimate (`claude_code.cost.usage`), for comparison with the metered cost. */
  reported_cost_usd: number;
  /** The terminal Claude Code ran in (`terminal.type`: vscode, iTerm.app, non-interactive…), the last seen. */
  terminal_type: string | null;
}

const empty = (day: string, member: string): Outcome => ({
  day,
  member_id: member,
  sessions: 0,
  sessions_seen: 0,
  lines_added: 0,
  lines_removed: 0,
  commits: 0,
  pull_requests: 0,
  edits: {},
  edits_by_language: {},
  active_seconds: 0,
  reported_cost_usd: 0,
  terminal_type: null,
});

function decide(into: Record<string, Decisions>, name: string, decision: string | undefined, n: number) {
  const d = (into[name] ??= { accepted: 0, rejected: 0 });
  if (decision === 'accept') d.accepted += n;
  else if (decision === 'reject') d.rejected += n;
}

function add(o: Outcome, r: OutcomeRow): void {
  const v = r.value;
  o.sessions_seen = Math.max(o.sessions_seen, r.sessions);
  o.terminal_type = r.dims['terminal.type'] ?? o.terminal_type;
  switch (r.metric) {
    case 'claude_code.session.count':
      o.sessions += v;
      break;
    case 'claude_code.lines_of_code.count':
      if (r.dims.type === 'added') o.lines_added += v;
      else if (r.dims.type === 'removed') o.lines_removed += v;
      break;
    case 'claude_code.commit.count':
      o.commits += v;
      break;
    case 'claude_code.pull_request.count':
      o.pull_requests += v;
      break;
    case 'claude_code.code_edit_tool.decision':
      decide(o.edits, r.dims.tool_name ?? 'unknown', r.dims.decision, v);
      decide(o.edits_by_language, r.dims.language ?? 'unknown', r.dims.decision, v);
      break;
    case 'claude_code.active_time.total':
      o.active_seconds += v;
      break;
    case 'claude_code.cost.usage':
      o.reported_cost_usd += v;
      break;
  }
}

/** Received telemetry per member and UTC day in [from, to), keyed `${day}|${member_id}`. */
export async function claudeCodeOutcomes(
  store: Pick<Store, 'telemetry'>,
  accountId: string,
  from: Date,
  to: Date,
  memberId: string | null = null,
): Promise<Map<string, Outcome>> {
  const rows = await store.telemetry.outcomes(accountId, from, to, memberId);
  const out = new Map<string, Outcome>();
  for (const r of rows) {
    const day = r.day.toISOString().slice(0, 10);
    const key = `${day}|${r.member_id}`;
    const o = out.get(key) ?? empty(day, r.member_id);
    add(o, r);
    out.set(key, o);
  }
  return out;
}

/** Accepted edits over all tools. */
export const acceptedEdits = (o: Outcome) => Object.values(o.edits).reduce((t, d) => t + d.accepted, 0);
/** Decided edits (accepted or rejected) over all tools. */
export const decidedEdits = (o: Outcome) =>
  Object.values(o.edits).reduce((t, d) => t + d.accepted + d.rejected, 0);
