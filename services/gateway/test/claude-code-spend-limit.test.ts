import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { UsageRow } from '../src/call-log/usage-queries';
import { closedPort, freshHome, killClaudeRuns, runClaude, type ClaudeRun } from './claude-code';
import { api, callAt, startStack, type SeededAccount, type Stack } from './harness';
import { handCents } from './kit/published-rates';

/**
 * Issue 30's must-show: Claude Code itself through the gateway, for a member whose spend limit is
 * $1 above what they have spent. Its calls go through until the limit is really reached, then it
 * shows the refusal's message. Each `claude -p` costs about 13 cents: the emulator writes as many
 * output tokens as `x-emulator-output-tokens` says, sent by Claude Code through
 * ANTHROPIC_CUSTOM_HEADERS.
 */
const LIMIT_CENTS = 500;
const SEEDED_CENTS = 400;
const MODEL = 'claude-sonnet-4-5';
// About 13 cents a run (8,000 Sonnet 4.5 output tokens): the last dollar in a handful of runs.
const OUTPUT_TOKENS = 8000;

let stack: Stack;
let acct: SeededAccount;
let root: string;
let blackholePort: number;

beforeAll(async () => {
  [stack, blackholePort] = await Promise.all([startStack(), closedPort()]);
  acct = await stack.seedAccount({ plan: 'team' });
  root = mkdtempSync(join(tmpdir(), 'keygate-claude-limit-'));
});
afterEach(killClaudeRuns);
afterAll(async () => {
  rmSync(root, { recursive: true, force: true });
  await stack?.close();
});

const admin = (path: string, body?: unknown) =>
  api(stack.gateway.url, `/v1/organizations${path}`, { key: acct.adminKey, body });

/** Every answered call of the member, with its cost by the published rates. */
async function answered(memberId: string): Promise<{ id: string; cents: number }[]> {
  await stack.gateway.writer.flush();
  const rows = await stack.gateway.store.db.sql<(UsageRow & { id: string })[]>`
    select id, model, input_tokens, output_tokens, cache_read_input_tokens, cache_creation_5m_tokens,
           cache_creation_1h_tokens, web_search_requests
    from calls where member_id = ${memberId} and status = 200 and model = ${MODEL}`;
  return rows.map((r) => ({ id: r.id, cents: handCents(r.model, r) }));
}

describe('Claude Code and a spend limit $1 above what the member has spent', () => {
  it('runs until the limit is really reached, then shows the refusal', { timeout: 300_000 }, async () => {
    const member = (await admin('/users', { email: 'cc-limit@example.com' })).body;
    const key = (await admin('/api_keys', { member_id: member.id })).body;
    // $4 of Sonnet 4.5 output ($15 per million tokens) spent earlier this month, by another call.
    await stack.gateway.store.calls.insertBatch([
      callAt(acct.id, new Date().toISOString(), {
        keyId: key.id,
        memberId: member.id,
        model: 'claude-opus-4-5',
        usage: { input_tokens: 0, output_tokens: (SEEDED_CENTS / 100) * 40_000 },
      }),
    ]);
    const limit = await admin('/spend_limits', {
      scope: { type: 'user', user_id: member.id },
      amount: String(LIMIT_CENTS),
      period: 'monthly',
    });
    expect(limit.status).toBe(200);

    const runs: ClaudeRun[] = [];
    /** Spend of the member's answered calls after each successful run. */
    const spentAfter: number[] = [];
    let refused: ClaudeRun | null = null;
    for (let i = 0; i < 80 && !refused; i++) {
      const home = join(root, 'home');
      freshHome(home);
      const run = await runClaude({
        home,
        prompt: `Say hello to the gateway, turn ${i}`,
        sessionId: randomUUID(),
        args: ['--model', MODEL],
        env: {
          ANTHROPIC_BASE_URL: stack.gateway.url,
          ANTHROPIC_AUTH_TOKEN: key.key,
          ANTHROPIC_CUSTOM_HEADERS: `x-emulator-output-tokens: ${OUTPUT_TOKENS}`,
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        },
        blackholePort,
        timeoutMs: 120_000,
      });
      runs.push(run);
      if (run.code === 0) {
        expect(run.stdout).toMatch(/^Emulated reply to: /);
        spentAfter.push((await answered(member.id)).reduce((a, c) => a + c.cents, SEEDED_CENTS));
      } else refused = run;
    }
    const calls = await answered(member.id);
    const total = calls.reduce((a, c) => a + c.cents, SEEDED_CENTS);
    const dearest = Math.max(...calls.map((c) => c.cents));
    console.info(
      `${spentAfter.length} Claude Code runs answered (${calls.length} calls, the dearest ${dearest.toFixed(2)} cents); refused at ${(total / 100).toFixed(4)} USD of ${LIMIT_CENTS / 100}`,
    );

    // It was refused, and the runs before it spent up to the limit: 95% of it or more.
    expect(refused, 'Claude Code was never refused').not.toBeNull();
    expect(spentAfter.length).toBeGreaterThanOrEqual(4);
    expect(total).toBeGreaterThanOrEqual(0.95 * LIMIT_CENTS);
    // Never past the limit by more than one call.
    expect(total).toBeLessThanOrEqual(LIMIT_CENTS + dearest);
    // Claude Code shows the refusal's message: the rule, what is spent and left, who can raise it.
    expect(refused!.code).toBe(1);
    expect(refused!.stdout).toMatch(
      /API Error: Request rejected \(429\) · This call is expected to cost about \$0\.\d\d .* more than the \$0\.\d\d left of your own monthly spend limit of \$5\.00 \(spl_\w+\): \$4\.\d\d is spent/,
    );
    expect(refused!.stdout).toMatch(/It resets at \d{4}-\d\d-01T00:00:00Z\./);
    expect(refused!.stdout).toMatch(/An admin of this account can raise it/);
    // The refusal is the gateway's own: no request of the refused run reached the provider.
    const rows = await stack.gateway.store.db.sql<{ status: number; error_type: string | null }[]>`
      select status, error_type from calls where member_id = ${member.id} and status <> 200`;
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(rows.every((r) => r.status === 429 && r.error_type === 'billing_error')).toBe(true);
  });
});
