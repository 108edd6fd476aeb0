/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { TableView } from '../components/table-view';
import { claudeCodeSessions } from '../../reports/claude-code-sessions';
import { num, usd, type Cell, type Table } from '../table';
import { outcomesTable } from './claude-code-outcomes';
import type { PageCtx, PageResult } from './page';

/**
 * Claude Code per member and day (sessions, cost from the metered calls, and what the member's
 * Claude Code reported through its OpenTelemetry export: lines, commits, pull requests, edit
 * decisions), then the period's sessions with their agent trees: the main agent, each subagent
 * below the agent that started it, what each cost alone and with everything below it.
 */
export async function claudeCodePage(p: PageCtx): Promise<PageResult> {
  const { deps, viewer, range } = p;
  const memberId = viewer.kind === 'member' ? viewer.memberId : (p.state.member ?? undefined);
  const sessions = await claudeCodeSessions(deps, viewer.accountId, {
    starting_at: range.from,
    ending_at: range.to,
    ...(memberId ? { user_id: memberId } : {}),
  });
  const [outcomes, joins] = await Promise.all([
    outcomesTable(p, sessions, memberId ?? null),
    deps.store.telemetry.joins(viewer.accountId, range.from, range.to, memberId ?? null),
  ]);
  const members = outcomes.emails;
  const joined = new Map<string, { api: number; joined: number }>();
  for (const j of joins) {
    const seen = joined.get(j.session_id) ?? { api: 0, joined: 0 };
    seen.api += j.api_requests;
    seen.joined += j.joined;
    joined.set(j.session_id, seen);
  }
  const rows: Cell[][] = [];
  for (const s of sessions) {
    const who = s.user_id ? (members.get(s.user_id) ?? s.user_id) : (s.api_key_id ?? '');
    for (const a of s.agents) {
      const label = a.agent_id ?? 'main agent';
      rows.push([
        s.date.slice(0, 10),
        who,
        s.session_id
          ? { text: s.session_id, href: p.href(`/dashboard/groups/${encodeURIComponent(s.session_id)}`) }
          : '',
        `${'  '.repeat(a.depth)}${a.depth > 0 ? '└ ' : ''}${label}`,
        num(a.requests),
        num(a.input_tokens + a.cache_read_input_tokens + a.cache_creation_input_tokens),
        num(a.output_tokens),
        usd(a.cost_cents),
        usd(a.tree_cost_cents),
        a.depth === 0 && s.session_id && joined.has(s.session_id)
          ? `${num(joined.get(s.session_id)!.joined)} of ${num(joined.get(s.session_id)!.api)}`
          : '',
      ]);
    }
  }
  const total = sessions.reduce((t, s) => t + s.cost_cents, 0);
  const table: Table = {
    id: 'sessions',
    caption: `Claude Code sessions and agent trees, ${range.label}`,
    columns: [
      { label: 'Day' },
      { label: 'Member' },
      { label: 'Session' },
      { label: 'Agent' },
      { label: 'Requests', numeric: true },
      { label: 'Input tokens', numeric: true },
      { label: 'Output tokens', numeric: true },
      { label: 'Cost (USD)', numeric: true },
      { label: 'With subagents (USD)', numeric: true },
      { label: 'Requests joined', numeric: true },
    ],
    rows,
    foot: sessions.length
      ? ['Total', '', `${sessions.length} sessions`, '', '', '', '', '', usd(total), '']
      : undefined,
    empty: 'No Claude Code calls in this period.',
  };
  const body = (
    <>
      <TableView table={outcomes.table} csvHref={p.csv(outcomes.table.id)} />
      <p class="note">
        Cost is what the metered calls cost at list prices. Lines, commits, pull requests and edit decisions
        are what each member's Claude Code reported through its OpenTelemetry export (set
        OTEL_EXPORTER_OTLP_ENDPOINT to this gateway's /otlp); a dash means nothing was received. Per PR and
        per accepted edit divide the day's cost by them. Prompts are never stored.
      </p>
      <TableView table={table} csvHref={p.csv(table.id)} />
      <p class="note">
        Agents come from Claude Code's x-claude-code-agent-id and x-claude-code-parent-agent-id headers; a
        subagent sits below the agent that started it. Requests joined: the session's telemetry api_request
        events whose request id names one of its metered calls.
      </p>
    </>
  );
  return {
    title: 'Claude Code',
    section: '/dashboard/claude-code',
    tables: [outcomes.table, table],
    body,
  };
}
