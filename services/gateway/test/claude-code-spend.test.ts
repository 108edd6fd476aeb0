import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageRow } from '../src/call-log/usage-queries';
import { api, callAt, startStack, type SeededAccount, type Stack } from './harness';
import { claudeCodeBody, claudeCodeCall, type Answer } from './kit/claude-code-call';
import { handCents } from './kit/published-rates';
import { waitFor } from './kit/wait';

/**
 * Issue 30 item 2: a $20 monthly spend limit and Claude Code's calls (600 KB, about 90% of the
 * prompt read from the cache, 128,000 max_tokens; each really costs about $0.10). A call holds
 * what it is expected to cost, so the first refusal comes at 95% of the limit or later, and the
 * calls in flight overshoot it by at most what they cost beyond their holds: one call per stream.
 */
const LIMIT_CENTS = 2_000;
/** Output of each call (the emulator writes as many tokens as it is told). */
const OUTPUT = { 'x-emulator-output-tokens': '550' };
/** Spent this month before the test's calls: $10 of Opus 5.5 output ($20 per million tokens). */
const SEEDED_CENTS = 1_000;

describe('a $20 monthly spend limit under Claude Code traffic', () => {
  let stack: Stack;
  let acct: SeededAccount;
  beforeAll(async () => {
    stack = await startStack();
    acct = await stack.seedAccount({ plan: 'team' });
    const limit = await api(stack.gateway.url, '/v1/organizations/spend_limits', {
      key: acct.adminKey,
      body: { scope: { type: 'organization' }, amount: String(LIMIT_CENTS), period: 'monthly' },
    });
    expect(limit.status).toBe(200);
  });
  afterAll(() => stack?.close());

  async function member(seededCents: number): Promise<{ memberId: string; key: string }> {
    const admin = (path: string, body?: unknown) =>
      api(stack.gateway.url, `/v1/organizations${path}`, { key: acct.adminKey, body });
    const n = Math.random().toString(36).slice(2, 8);
    const m = (await admin('/users', { email: `cc-${n}@example.com` })).body;
    const k = (await admin('/api_keys', { member_id: m.id })).body;
    if (seededCents > 0)
      await stack.gateway.store.calls.insertBatch([
        callAt(acct.id, new Date().toISOString(), {
          keyId: k.id,
          memberId: m.id,
          model: 'claude-opus-5-5',
          usage: { input_tokens: 0, output_tokens: (seededCents / 100) * 50_000 },
        }),
      ]);
    return { memberId: m.id, key: k.key };
  }

  /** Each 200's cost (by request id) once every admitted call is in the call log, and the member's month so far. */
  async function costs(memberId: string, admitted: number) {
    const rows = await waitFor(
      async () => {
        await stack.gateway.writer.flush();
        const r = await stack.gateway.store.db.sql<(UsageRow & { id: string })[]>`
          select id, model, input_tokens, output_tokens, cache_read_input_tokens, cache_creation_5m_tokens,
                 cache_creation_1h_tokens, web_search_requests
          from calls where member_id = ${memberId} and status = 200`;
        return r.length >= admitted + 1 ? r : null;
      },
      { timeout: 20_000, what: 'the admitted calls in the call log' },
    );
    const byId = new Map(rows.map((r) => [r.id, handCents(r.model, r)]));
    return { byId, total: [...byId.values()].reduce((a, b) => a + b, 0) };
  }

  /** Sends stream `s`'s calls one after another until the first refusal; answers in order of arrival go to `log`. */
  async function stream(key: string, s: number, log: Answer[], max = 150): Promise<void> {
    for (let i = 0; i < max; i++) {
      const a = await claudeCodeCall(stack.gateway.url, key, claudeCodeBody(600_000, s), OUTPUT);
      log.push(a);
      if (a.status !== 200) return;
    }
  }

  /** Spend when the first refusal came (the seeded spend and every call answered before it), and at the end. */
  async function outcome(memberId: string, log: Answer[]) {
    const admitted = log.filter((a) => a.status === 200);
    const { byId, total } = await costs(memberId, admitted.length);
    const first = log.findIndex((a) => a.status !== 200);
    const cost = (a: Answer) => byId.get(a.headers.get('keygate-request-id')!) ?? 0;
    const before = log.slice(0, first).reduce((sum, a) => sum + cost(a), SEEDED_CENTS);
    const dearest = Math.max(...admitted.map(cost));
    return { first: log[first], before, total, dearest };
  }

  it('sequential 600 KB calls: the first refusal at 95% or later, the month never past the limit by more than a call', async () => {
    const m = await member(SEEDED_CENTS);
    const log: Answer[] = [];
    await stream(m.key, 0, log);
    const { first, before, total, dearest } = await outcome(m.memberId, log);
    console.info(
      `sequential: ${log.length - 1} calls admitted, refused at ${(before / 100).toFixed(2)} USD, ${(total / 100).toFixed(2)} USD spent of 20`,
    );
    expect(first?.status).toBe(429);
    expect(first!.error).toMatchObject({ type: 'billing_error' });
    expect(first!.headers.get('x-should-retry')).toBe('false');
    expect(first!.error!.message).toMatch(
      /left of the organization's per-member monthly spend limit of \$20\.00 \(spl_\w+\): \$19\.\d\d is spent .*resets at .*An admin of this account/,
    );
    expect(before).toBeGreaterThanOrEqual(LIMIT_CENTS * 0.95);
    expect(total).toBeLessThanOrEqual(LIMIT_CENTS + dearest);
    // The refused call is in the call log with its model and the rule that refused it.
    const log429 = (
      await api(stack.gateway.url, `/v1/organizations/requests?user_id=${m.memberId}&status=429`, {
        key: acct.adminKey,
      })
    ).body;
    expect(log429.data).toEqual([
      expect.objectContaining({
        model: 'claude-opus-5-5',
        error_type: 'billing_error',
        refusal: expect.stringMatching(/^spend_limit:spl_/),
      }),
    ]);
  }, 180_000);

  it('three parallel streams of 600 KB calls: the first refusal at 95% or later, at most one call per stream past the limit', async () => {
    const m = await member(SEEDED_CENTS);
    const log: Answer[] = [];
    await Promise.all([1, 2, 3].map((s) => stream(m.key, s, log)));
    const { first, before, total, dearest } = await outcome(m.memberId, log);
    console.info(
      `parallel: ${log.filter((a) => a.status === 200).length} calls admitted, refused at ${(before / 100).toFixed(2)} USD, ${(total / 100).toFixed(2)} USD spent of 20`,
    );
    expect(first!.error).toMatchObject({ type: 'billing_error' });
    expect(before).toBeGreaterThanOrEqual(LIMIT_CENTS * 0.95);
    expect(total).toBeLessThanOrEqual(LIMIT_CENTS + 3 * dearest);
  }, 180_000);

  it('a fresh $20 limit with nothing spent admits three parallel 600 KB calls', async () => {
    const m = await member(0);
    const answers = await Promise.all(
      [4, 5, 6].map((s) => claudeCodeCall(stack.gateway.url, m.key, claudeCodeBody(600_000, s), OUTPUT)),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
  });
});
