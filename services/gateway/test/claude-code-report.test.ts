import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, freshHome, killClaudeRuns, runClaude } from './claude-code';
import { api, callModel, startStack, type Stack } from './harness';
import { handCents } from './kit/published-rates';

let stack: Stack;
let root: string;
let admin: string;
const m = { one: '', two: '' };
const keys = { one: { id: '', secret: '' }, two: { id: '', secret: '' }, loose: { id: '', secret: '' } };
const sessions = { a: randomUUID(), b: randomUUID(), loose: randomUUID() };
const report = '/v1/organizations/usage_report/claude_code';
const get = (q: string) => api(stack.gateway.url, `${report}?${q}`, { key: admin });

async function claude(key: string, sessionId: string) {
  const home = join(root, sessionId);
  freshHome(home);
  const env = {
    ANTHROPIC_BASE_URL: stack.gateway.url,
    ANTHROPIC_AUTH_TOKEN: key,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  };
  const run = await runClaude({
    home,
    prompt: 'Say hello to the report',
    sessionId,
    env,
    blackholePort: await closedPort(),
  });
  expect(run.code, run.stdout + run.stderr).toBe(0);
}

beforeAll(async () => {
  stack = await startStack();
  root = mkdtempSync(join(tmpdir(), 'keygate-cc-report-'));
  admin = (await stack.newKey({ kind: 'admin' })).secret;
  const member = async (email: string) =>
    (await api(stack.gateway.url, '/v1/organizations/users', { key: admin, body: { email } })).body
      .id as string;
  m.one = await member('one@cc.test');
  m.two = await member('two@cc.test');
  // Live keys (answered by the emulator behind the account's provider key): a test key's calls cost nothing.
  keys.one = await stack.newKey({ kind: 'live', memberId: m.one });
  keys.two = await stack.newKey({ kind: 'live', memberId: m.two });
  keys.loose = await stack.newKey({ kind: 'live', app: 'ci' });

  // Member one: two real Claude Code sessions. The key of no member: Claude Code as its headers
  // show it (session id, beta flag, user agent). Member two: only a plain SDK-style call.
  await claude(keys.one.secret, sessions.a);
  await claude(keys.one.secret, sessions.b);
  const headers = {
    'x-claude-code-session-id': sessions.loose,
    'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14',
    'user-agent': 'claude-cli/2.1.300 (external, cli)',
  };
  expect((await callModel(stack.gateway.url, keys.loose.secret, headers)).status).toBe(200);
  expect(
    (
      await callModel(stack.gateway.url, keys.loose.secret, {
        'user-agent': 'claude-cli/2.1.300 (external, cli)',
      })
    ).status,
  ).toBe(200);
  expect((await callModel(stack.gateway.url, keys.two.secret, { 'user-agent': 'my-app/1.0' })).status).toBe(
    200,
  );
}, 180_000);
afterEach(killClaudeRuns);
afterAll(async () => {
  rmSync(root, { recursive: true, force: true });
  await stack?.close();
});

/** The report's figures, straight from the call records. */
function expected(rows: Record<string, any>[], actor: string) {
  const mine = rows.filter((r) => r.client === 'claude_code' && (r.member_id ?? r.key_id) === actor);
  const models = new Map<string, Record<string, number>>();
  for (const r of mine.filter((c) => c.endpoint === 'messages')) {
    const t = models.get(r.model) ?? { input: 0, output: 0, cache_read: 0, w5m: 0, w1h: 0, search: 0 };
    t.input! += r.input_tokens;
    t.output! += r.output_tokens;
    t.cache_read! += r.cache_read_input_tokens;
    t.w5m! += r.cache_creation_5m_tokens;
    t.w1h! += r.cache_creation_1h_tokens;
    t.search! += r.web_search_requests;
    models.set(r.model, t);
  }
  return {
    sessions: new Set(mine.map((r) => r.group_id).filter(Boolean)).size,
    models: [...models]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([model, t]) => ({
        model,
        tokens: {
          input: t.input,
          output: t.output,
          cache_read: t.cache_read,
          cache_creation: t.w5m! + t.w1h!,
        },
        cents: handCents(model, {
          input_tokens: t.input!,
          output_tokens: t.output!,
          cache_read_input_tokens: t.cache_read!,
          cache_creation_5m_tokens: t.w5m!,
          cache_creation_1h_tokens: t.w1h!,
          web_search_requests: t.search!,
        }),
      })),
  };
}

describe('usage_report/claude_code, from what the gateway sees', () => {
  it('records which calls Claude Code made, from their headers', async () => {
    const rows = await stack.calls();
    const byKey = (id: string) => rows.filter((r) => r.key_id === id).map((r) => r.client);
    expect(byKey(keys.one.id).length).toBeGreaterThanOrEqual(2);
    expect(new Set(byKey(keys.one.id))).toEqual(new Set(['claude_code']));
    expect(byKey(keys.loose.id)).toEqual(['claude_code', 'claude_code']);
    expect(byKey(keys.two.id)).toEqual([null]);
  });

  it('one row per actor for the day: sessions, tokens and estimated cost per model equal the call records', async () => {
    const rows = await stack.calls();
    const day = rows[0]!.created_at.toISOString().slice(0, 10);
    const { status, body } = await get(`starting_at=${day}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ has_more: false, next_page: null });
    expect(body.data).toHaveLength(2);
    const one = body.data.find((d: any) => d.user_id === m.one);
    const loose = body.data.find((d: any) => d.api_key_id === keys.loose.id);
    expect(one).toMatchObject({
      date: `${day}T00:00:00Z`,
      actor: { type: 'user_actor', email_address: 'one@cc.test' },
      organization_id: stack.account.id,
      customer_type: 'api',
      core_metrics: {
        num_sessions: 2,
        lines_of_code: null,
        commits_by_claude_code: null,
        pull_requests_by_claude_code: null,
      },
    });
    expect(loose).toMatchObject({
      actor: { type: 'api_actor', api_key_name: expect.stringContaining('live key') },
      user_id: null,
      core_metrics: { num_sessions: 1 },
    });
    for (const [row, actor] of [
      [one, m.one],
      [loose, keys.loose.id],
    ] as const) {
      const want = expected(rows, actor);
      expect(row.core_metrics.num_sessions).toBe(want.sessions);
      expect(row.model_breakdown.map((b: any) => ({ model: b.model, tokens: b.tokens }))).toEqual(
        want.models.map(({ model, tokens }) => ({ model, tokens })),
      );
      for (const [i, b] of row.model_breakdown.entries()) {
        expect(b.estimated_cost.currency).toBe('USD');
        expect(b.estimated_cost.amount).toBeCloseTo(want.models[i]!.cents, 6);
      }
      expect(row.model_breakdown.every((b: any) => b.tokens.input + b.tokens.output > 0)).toBe(true);
    }
    // Member two made no Claude Code call; another day has none at all.
    expect(body.data.some((d: any) => d.user_id === m.two)).toBe(false);
    expect((await get('starting_at=2025-01-01')).body).toEqual({
      data: [],
      has_more: false,
      next_page: null,
    });
  });

  it('pages through actors with limit and next_page', async () => {
    const day = (await stack.calls())[0]!.created_at.toISOString().slice(0, 10);
    const all = (await get(`starting_at=${day}`)).body.data;
    const first = (await get(`starting_at=${day}&limit=1`)).body;
    expect(first).toMatchObject({ has_more: true, data: [all[0]] });
    const second = (await get(`starting_at=${day}&limit=1&page=${first.next_page}`)).body;
    expect(second).toMatchObject({ has_more: false, next_page: null, data: [all[1]] });
  });

  it('answers 400 to what it cannot do', async () => {
    for (const [q, message] of [
      ['', /starting_at: Field required/],
      ['starting_at=2025-01-01&limit=1001', /limit/],
      ['starting_at=2025-01-01&page=bogus', /page: not a next_page token/],
      ['starting_at=2025-01-01&group_by[]=model', /Unknown query parameter 'group_by\[\]'/],
    ] as const) {
      const res = await get(q);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(message);
    }
  });
});
