import { describe, expect, it } from 'vitest';
import { Prices, rowCounts } from '../pricing/prices';
import type { AgentRow } from './agent-tree-queries';
import { claudeCodeSessions } from './claude-code-sessions';

const DAY = new Date('2026-11-25T00:00:00Z');
const row = (o: Partial<AgentRow>): AgentRow => ({
  day: DAY,
  member_id: 'user_a',
  key_id: 'key_a',
  session_id: 'sess-1',
  agent_id: null,
  parent_agent_id: null,
  model: 'claude-haiku-4-5',
  first_at: new Date('2026-11-25T10:00:00Z'),
  requests: 1,
  errors: 0,
  input_tokens: 1000,
  output_tokens: 100,
  cache_creation_5m_tokens: 0,
  cache_creation_1h_tokens: 0,
  cache_read_input_tokens: 0,
  web_search_requests: 0,
  test: false,
  ...o,
});
const prices = new Prices();
const cost = (r: AgentRow) => prices.usageCostCents(r.model, rowCounts(r));

describe('claudeCodeSessions', () => {
  it('builds each session’s agent tree, costs per agent and per subtree', async () => {
    const rows = [
      row({ requests: 3, output_tokens: 300 }),
      row({ agent_id: 'a1', first_at: new Date('2026-11-25T10:01:00Z'), model: 'claude-opus-4-5' }),
      row({ agent_id: 'a2', parent_agent_id: 'a1', first_at: new Date('2026-11-25T10:02:00Z') }),
      row({ agent_id: 'a3', first_at: new Date('2026-11-25T10:03:00Z'), input_tokens: 5 }),
      row({ session_id: 'sess-2', member_id: 'user_b', key_id: 'key_b', requests: 2 }),
    ];
    const sessions = await claudeCodeSessions(
      { store: { agentTree: { rows: async () => rows } }, prices },
      'acct',
      {
        starting_at: DAY,
      },
    );
    expect(sessions.map((s) => [s.session_id, s.user_id, s.requests])).toEqual([
      ['sess-1', 'user_a', 6],
      ['sess-2', 'user_b', 2],
    ]);
    const tree = sessions[0]!.agents;
    expect(tree.map((a) => [a.agent_id, a.depth])).toEqual([
      [null, 0],
      ['a1', 1],
      ['a2', 2],
      ['a3', 1],
    ]);
    const [main, a1, a2, a3] = rows.map(cost);
    expect(tree[1]!.tree_cost_cents).toBeCloseTo(a1! + a2!, 6);
    expect(tree[0]!.tree_cost_cents).toBeCloseTo(main! + a1! + a2! + a3!, 6);
    expect(sessions[0]!.cost_cents).toBeCloseTo(main! + a1! + a2! + a3!, 6);
    expect(tree[1]!.models).toEqual(['claude-opus-4-5']);
  });
});
