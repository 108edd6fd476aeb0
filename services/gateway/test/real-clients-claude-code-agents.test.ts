import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { addMember } from '../src/accounts/members';
import type { SessionLine } from '../src/reports/claude-code-sessions';
import { closedPort, freshHome, killClaudeRuns, runClaude } from './claude-code';
import { startStack, type Stack } from './harness';
import { handCentsOfUsage, type ProviderUsage } from './kit/published-rates';

let stack: Stack;
let root: string;
let blackholePort: number;

beforeAll(async () => {
  blackholePort = await closedPort();
  root = mkdtempSync(join(tmpdir(), 'keygate-claude-agents-'));
  stack = await startStack();
});
afterEach(killClaudeRuns);
afterAll(async () => {
  await stack?.close();
  rmSync(root, { recursive: true, force: true });
});

/**
 * Real Claude Code with a subagent: the prompt names its Agent tool, so the emulator answers the
 * main agent with a tool call that starts a subagent; the subagent's calls carry its own agent id
 * and its parent's. The gateway's report and dashboard show the session as a tree with costs.
 */
describe('Claude Code with a subagent through the gateway', () => {
  it('shows the session and its agent tree with costs, per member and day', {
    timeout: 150_000,
  }, async () => {
    const scope = { accountId: stack.account.id, actor: 'test' };
    const admin = await stack.newKey({ kind: 'admin' });
    const dev = await addMember(stack.deps as never, scope, { email: 'dev@example.com', role: 'developer' });
    const key = await stack.newKey({ memberId: dev.id });
    const home = join(root, 'home');
    freshHome(home);
    const sessionId = randomUUID();
    const run = await runClaude({
      home,
      prompt: 'Start an agent to survey this folder, then report what it found.',
      sessionId,
      env: {
        ANTHROPIC_BASE_URL: stack.gateway.url,
        ANTHROPIC_AUTH_TOKEN: key.secret,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      },
      blackholePort,
      timeoutMs: 120_000,
    });
    expect(run.code, run.stdout + run.stderr).toBe(0);

    // Every call of the session carries the agent ids Claude Code sent, as the provider received them.
    const calls = (await stack.calls()).filter((c) => c.group_id === sessionId && c.endpoint === 'messages');
    for (const c of calls) {
      const seen = stack.emulator.ledger.find(c.upstream_message_id)!;
      expect(c.agent_id).toBe(seen.headers['x-claude-code-agent-id'] ?? null);
      expect(c.parent_agent_id).toBe(seen.headers['x-claude-code-parent-agent-id'] ?? null);
      expect(c.member_id).toBe(dev.id);
    }
    const subagents = [...new Set(calls.map((c) => c.agent_id).filter((a): a is string => a !== null))];
    expect(subagents.length).toBeGreaterThanOrEqual(1);
    expect(calls.some((c) => c.agent_id === null)).toBe(true);

    // The report: one session of the member, the main agent at the root, the subagent below it.
    const day = new Date().toISOString().slice(0, 10);
    const res = await fetch(
      `${stack.gateway.url}/v1/organizations/usage_report/claude_code/sessions?starting_at=${day}T00:00:00Z`,
      { headers: { 'x-api-key': admin.secret } },
    );
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: SessionLine[] };
    const session = data.find((s) => s.session_id === sessionId)!;
    expect(session).toMatchObject({ user_id: dev.id, requests: calls.length });
    expect(session.agents[0]).toMatchObject({ agent_id: null, depth: 0 });
    for (const id of subagents) expect(session.agents.find((a) => a.agent_id === id)?.depth).toBe(1);
    // What the provider billed: the emulator's own usage of each call, at the published price.
    const billed = (c: Record<string, any>) => {
      const seen = stack.emulator.ledger.find(c.upstream_message_id)!;
      return handCentsOfUsage(seen.model!, seen.usage as ProviderUsage);
    };
    const expected = calls.reduce((t, c) => t + billed(c), 0);
    expect(session.cost_cents).toBeCloseTo(expected, 6);
    const sub = session.agents.find((a) => a.agent_id === subagents[0])!;
    const subCalls = calls.filter((c) => c.agent_id === subagents[0]);
    expect(sub.requests).toBe(subCalls.length);
    expect(sub.cost_cents).toBeCloseTo(
      subCalls.reduce((t, c) => t + billed(c), 0),
      6,
    );
    expect(sub.cost_cents).toBeGreaterThan(0);

    // The dashboard page shows the same tree to the account admin.
    const page = await dashboardGet(stack, admin.secret, '/dashboard/claude-code?period=today');
    expect(page).toContain(sessionId);
    expect(page).toContain(`└ ${subagents[0]}`);
    expect(page).toContain('main agent');
  });
});

/** A dashboard page as signed in with `key` (sign-in form, its CSRF cookie, the session cookie). */
async function dashboardGet(stack: Stack, key: string, path: string): Promise<string> {
  const base = stack.gateway.url;
  const form = await fetch(`${base}/dashboard/sign-in`);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const cookies = (res: Response) =>
    res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
  const signed = await fetch(`${base}/dashboard/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: cookies(form), origin: base, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, token: key }),
  });
  expect(signed.status).toBe(303);
  const page = await fetch(`${base}${path}`, { headers: { cookie: cookies(signed) } });
  expect(page.status).toBe(200);
  return page.text();
}
