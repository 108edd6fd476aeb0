/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import { TableView } from '../components/table-view';
import { claudeCodeSessions } from '../../reports/claude-code-sessions';
import { num, usd, type Cell, type Table } from '../table';
import type { PageCtx, PageResult } from './page';

/**
 * Claude Code sessions of the period with their agent trees: the main agent, each subagent below
 * the agent that started it, what each cost alone and with everything below it.
 */
export async function claudeCodePage(p: PageCtx): Promise<PageResult> {
  const { deps, viewer, range } = p;
  const memberId = viewer.kind === 'member' ? viewer.memberId : (p.state.member ?? undefined);
  const sessions = await claudeCodeSessions(deps.store, viewer.accountId, {
    starting_at: range.from,
    ending_at: range.to,
    ...(memberId ? { user_id: memberId } : {}),
  });
  const members = await deps.store.members.emails(viewer.accountId, [
    ...new Set(sessions.map((s) => s.user_id).filter((m): m is string => !!m)),
  ]);
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
    ],
    rows,
    foot: sessions.length
      ? ['Total', '', `${sessions.length} sessions`, '', '', '', '', '', usd(total)]
      : undefined,
    empty: 'No Claude Code calls in this period.',
  };
  const body = (
    <>
      <TableView table={table} csvHref={p.csv(table.id)} />
      <p class="note">
        Agents come from Claude Code's x-claude-code-agent-id and x-claude-code-parent-agent-id headers; a
        subagent sits below the agent that started it. Costs are estimates at list prices.
      </p>
    </>
  );
  return { title: 'Claude Code', section: '/dashboard/claude-code', tables: [table], body };
}
