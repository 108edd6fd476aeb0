import { z } from 'zod';
import { rowCounts, type Prices, type Priced } from '../pricing/prices';
import type { AgentRow } from './agent-tree-queries';
import type { Store } from '../store';
import { isoSeconds } from './buckets';
import { timestamp } from './query';

const DAY = 86_400_000;

export const ClaudeCodeSessionsParams = z.object({
  starting_at: timestamp,
  /** Exclusive; one day after starting_at unless given (at most 31 days). */
  ending_at: timestamp.optional(),
  user_id: z.string().min(1).optional(),
});

export interface AgentNode {
  /** Claude Code's agent id; null for calls that carried none (the main agent of older clients). */
  agent_id: string | null;
  parent_agent_id: string | null;
  /** 0 for the main agent, 1 for its subagents, and so on. */
  depth: number;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  /** Estimated cost in USD cents at list prices, this agent alone. */
  cost_cents: number;
  /** This agent and every agent below it. */
  tree_cost_cents: number;
  models: string[];
}

export interface SessionLine {
  date: string;
  user_id: string | null;
  api_key_id: string | null;
  session_id: string | null;
  started_at: string;
  requests: number;
  cost_cents: number;
  /** Depth-first: each agent followed by the agents it started. */
  agents: AgentNode[];
}

const round = (cents: number) => Math.round(cents * 1e6) / 1e6;

/**
 * Cost per Claude Code session and per agent tree (the main agent and each subagent, from
 * `x-claude-code-agent-id` / `x-claude-code-parent-agent-id`), per member and UTC day.
 */
export async function claudeCodeSessions(
  { store, prices }: Priced<Pick<Store, 'agentTree'>>,
  accountId: string,
  q: z.infer<typeof ClaudeCodeSessionsParams>,
): Promise<SessionLine[]> {
  const from = new Date(Math.floor(q.starting_at.getTime() / DAY) * DAY);
  const to = q.ending_at ?? new Date(from.getTime() + DAY);
  const rows = await store.agentTree.rows(
    accountId,
    from,
    new Date(Math.min(to.getTime(), from.getTime() + 31 * DAY)),
    q.user_id ?? null,
  );
  const sessions = new Map<string, AgentRow[]>();
  for (const r of rows) {
    const id = JSON.stringify([r.day.getTime(), r.member_id, r.member_id ? null : r.key_id, r.session_id]);
    sessions.set(id, [...(sessions.get(id) ?? []), r]);
  }
  return [...sessions.values()].map((list) => sessionLine(prices, list));
}

function sessionLine(prices: Prices, list: AgentRow[]): SessionLine {
  const first = list[0]!;
  const byAgent = new Map<string | null, AgentNode>();
  for (const r of list) {
    const node =
      byAgent.get(r.agent_id) ??
      ({
        agent_id: r.agent_id,
        parent_agent_id: r.parent_agent_id,
        depth: 0,
        requests: 0,
        input_tokens: 0,
        output_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
        cost_cents: 0,
        tree_cost_cents: 0,
        models: [],
      } satisfies AgentNode);
    node.parent_agent_id ??= r.parent_agent_id;
    node.requests += r.requests;
    node.input_tokens += r.input_tokens;
    node.output_tokens += r.output_tokens;
    node.cache_read_input_tokens += r.cache_read_input_tokens;
    node.cache_creation_input_tokens += r.cache_creation_5m_tokens + r.cache_creation_1h_tokens;
    // A test key's calls cost nothing.
    if (!r.test) node.cost_cents += prices.usageCostCents(r.model, rowCounts(r));
    if (r.model && !node.models.includes(r.model)) node.models.push(r.model);
    byAgent.set(r.agent_id, node);
  }
  const nodes = [...byAgent.values()];
  // The main agent may send no agent id; the agents without a known parent then hang below it.
  const main = byAgent.get(null) ?? null;
  const roots = nodes.filter((n) => !n.parent_agent_id || !byAgent.has(n.parent_agent_id));
  const childrenOf = (n: AgentNode): AgentNode[] =>
    n === main
      ? roots.filter((r) => r !== main)
      : nodes.filter((c) => c !== n && n.agent_id !== null && c.parent_agent_id === n.agent_id);
  const ordered: AgentNode[] = [];
  const seen = new Set<AgentNode>();
  const visit = (n: AgentNode, depth: number): number => {
    if (seen.has(n)) return 0;
    seen.add(n);
    n.depth = depth;
    ordered.push(n);
    n.tree_cost_cents = n.cost_cents;
    for (const c of childrenOf(n)) n.tree_cost_cents += visit(c, depth + 1);
    n.cost_cents = round(n.cost_cents);
    n.tree_cost_cents = round(n.tree_cost_cents);
    return n.tree_cost_cents;
  };
  for (const root of main ? [main] : roots) visit(root, 0);
  return {
    date: isoSeconds(first.day),
    user_id: first.member_id,
    api_key_id: first.member_id ? null : first.key_id,
    session_id: first.session_id,
    started_at: isoSeconds(new Date(Math.min(...list.map((r) => r.first_at.getTime())))),
    requests: nodes.reduce((t, n) => t + n.requests, 0),
    cost_cents: round(ordered.filter((n) => n.depth === 0).reduce((t, n) => t + n.tree_cost_cents, 0)),
    agents: ordered,
  };
}
