import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startStack, type SeededAccount, type Stack } from './harness';
import { claudeCodeBody, claudeCodeCall } from './kit/claude-code-call';
import { dashboardSession } from './dashboard-http';

/**
 * Issue 30 item 5: one rule for test keys (README, "Test keys"): their calls cost $0 on every
 * page, report and call log row, and count toward no spend limit, budget or invoice. Before, the
 * same kg_test_ calls showed $0.0000 in usage reports but $0.0919 on the Claude Code page, the
 * budgets page and the call log, and a spend limit refused the member for them.
 */
describe("a test key's calls cost nothing, everywhere", () => {
  let stack: Stack;
  let acct: SeededAccount;
  let member: { id: string };
  let key: { id: string; key: string };
  beforeAll(async () => {
    stack = await startStack();
    acct = await stack.seedAccount({ plan: 'team' });
    const admin = (path: string, body?: unknown) =>
      api(stack.gateway.url, `/v1/organizations${path}`, { key: acct.adminKey, body });
    member = (await admin('/users', { email: 'tester@example.com' })).body;
    key = (await admin('/api_keys', { member_id: member.id, kind: 'test' })).body;
    expect(key.key).toMatch(/^kg_test_/);
    // A 1-cent monthly limit per member and a 1-cent hard-capped member budget: a few Claude Code calls would pass both.
    expect(
      (await admin('/spend_limits', { scope: { type: 'organization' }, amount: '1', period: 'monthly' }))
        .status,
    ).toBe(200);
    expect(
      (await admin('/budgets', { scope: 'user', target_id: member.id, limit_cents: 1, hard_cap: true }))
        .status,
    ).toBe(201);
    for (let i = 0; i < 4; i++) {
      const a = await claudeCodeCall(stack.gateway.url, key.key, claudeCodeBody(60_000, i), {
        'x-emulator-output-tokens': '500',
      });
      expect(a.status, a.error?.message).toBe(200);
    }
    await stack.gateway.writer.flush();
    await stack.gateway.limits.admission.settled();
  });
  afterAll(() => stack?.close());

  const admin = (path: string) => api(stack.gateway.url, `/v1/organizations${path}`, { key: acct.adminKey });

  it('no spend limit or budget counts them: the member is never refused, and spends $0', async () => {
    const effective = (await admin(`/spend_limits/effective?user_ids[]=${member.id}`)).body;
    expect(effective.data).toEqual([expect.objectContaining({ amount: '1' })]);
    const budgets = (await admin('/budgets')).body.data;
    expect(budgets.map((b: { progress: { spent_cents: number } }) => b.progress.spent_cents)).toEqual([0]);
  });

  it('the call log shows each call at $0, marked as a test call', async () => {
    const log = (await admin(`/requests?api_key_id=${key.id}`)).body.data;
    expect(log).toHaveLength(4);
    for (const row of log) {
      expect(row.usage.output_tokens).toBeGreaterThanOrEqual(500);
      expect(row.cost).toEqual({ currency: 'USD', amount: '0', unpriced: false, test: true });
    }
  });

  it('the Claude Code report and the cost report show $0', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const cc = (await admin(`/usage_report/claude_code?starting_at=${today}`)).body;
    const costs = JSON.stringify(cc).match(/"amount":\s*"?[\d.]+/g) ?? [];
    expect(costs.filter((c) => Number(c.replace(/.*:\s*"?/, '')) !== 0)).toEqual([]);
    // The Claude Code page's sessions: the test key's session is there, at $0.
    const sessions = JSON.stringify(
      (await admin(`/usage_report/claude_code/sessions?starting_at=${today}`)).body,
    );
    const cents = [...sessions.matchAll(/"(?:tree_)?cost_cents":([\d.]+)/g)].map((m) => Number(m[1]));
    expect(cents.length).toBeGreaterThan(0);
    expect(cents.filter((c) => c !== 0)).toEqual([]);
  });

  it('every dashboard page that shows cost shows $0 for them', async () => {
    const session = await dashboardSession(stack.gateway.url, acct.adminKey);
    for (const path of [
      '/dashboard',
      '/dashboard/members',
      '/dashboard/keys',
      '/dashboard/models',
      '/dashboard/groups',
      '/dashboard/claude-code',
      '/dashboard/budgets',
      '/dashboard/spend-limits',
      '/dashboard/calls',
    ]) {
      const res = await session.get(`${path}?period=today`);
      expect(res.status, path).toBe(200);
      const html = await res.text();
      // Every amount is zero, but the 1-cent limits themselves: "$0.01" in text, and the tables'
      // USD cells (four decimals, dashboard/table.ts `usd`).
      const amounts = [
        ...(html.match(/\$\d[\d,]*\.\d+/g) ?? []),
        ...[...html.matchAll(/<td[^>]*>\s*(\d[\d,]*\.\d{4})\b/g)].map((m) => m[1]!),
      ];
      const dollars = amounts.map((a) => Number(a.replace('$', '').replaceAll(',', '')));
      expect(
        dollars.filter((d) => d !== 0 && d !== 0.01),
        path,
      ).toEqual([]);
    }
  });
});
