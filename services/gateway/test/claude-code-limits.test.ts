import { describe, expect, it } from 'vitest';
import { api, useStackWithAccount } from './harness';
import { claudeCodeBody, claudeCodeCall } from './kit/claude-code-call';

/**
 * Issue 30 item 1: a team member's key with the plan's default limits runs Claude Code's
 * parallel subagents. Late in a session a call is 150–600 KB with about 90% of its prompt read
 * from the cache and 128,000 max_tokens; the provider counts neither the cache reads toward its
 * input-token limit nor max_tokens as output, and neither does Keygate now.
 */
describe("Claude Code's traffic on a member's default key", () => {
  const env = useStackWithAccount('team');

  const admin = (path: string, body?: unknown) =>
    api(env.stack.gateway.url, `/v1/organizations${path}`, { key: env.acct.adminKey, body });

  async function memberKey(limits?: object): Promise<{ id: string; key: string }> {
    const n = Math.random().toString(36).slice(2, 8);
    const member = (await admin('/users', { email: `dev-${n}@example.com` })).body;
    return (await admin('/api_keys', { member_id: member.id, ...(limits ? { limits } : {}) })).body;
  }

  it('three parallel 150 KB subagent calls are all answered, with the provider rate-limit headers', async () => {
    const k = await memberKey();
    const answers = await Promise.all(
      [0, 1, 2].map((s) => claudeCodeCall(env.stack.gateway.url, k.key, claudeCodeBody(150_000, s))),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    const h = answers[0]!.headers;
    expect(h.get('anthropic-ratelimit-requests-limit')).toBe('2000');
    expect(h.get('anthropic-ratelimit-input-tokens-limit')).toBe('2000000');
    expect(h.get('anthropic-ratelimit-output-tokens-limit')).toBe('400000');
    expect(Number(h.get('anthropic-ratelimit-input-tokens-remaining'))).toBeLessThan(2_000_000);
    expect(h.get('anthropic-ratelimit-tokens-limit')).not.toBeNull();
    expect(Date.parse(h.get('anthropic-ratelimit-output-tokens-reset')!)).toBeGreaterThan(0);
  });

  it('five parallel 600 KB subagents are never refused by a default', async () => {
    const k = await memberKey();
    for (let turn = 0; turn < 2; turn++) {
      const answers = await Promise.all(
        [0, 1, 2, 3, 4].map((s) => claudeCodeCall(env.stack.gateway.url, k.key, claudeCodeBody(600_000, s))),
      );
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    }
  });

  it("five parallel 600 KB subagents over a member's two keys are never refused by the member's plan default", async () => {
    const n = Math.random().toString(36).slice(2, 8);
    const member = (await admin('/users', { email: `two-${n}@example.com` })).body;
    const keys = [
      (await admin('/api_keys', { member_id: member.id })).body.key,
      (await admin('/api_keys', { member_id: member.id })).body.key,
    ];
    const plan = (await admin('/rate_limits?scope_type=user')).body.data.find(
      (e: { source: string }) => e.source === 'plan',
    );
    expect(plan.limits).toEqual([
      { type: 'requests_per_minute', value: 2000 },
      { type: 'input_tokens_per_minute', value: 2_000_000 },
      { type: 'output_tokens_per_minute', value: 400_000 },
    ]);
    for (let turn = 0; turn < 2; turn++) {
      const answers = await Promise.all(
        [0, 1, 2, 3, 4].map((s) =>
          claudeCodeCall(env.stack.gateway.url, keys[s % 2]!, claudeCodeBody(600_000, 10 + s)),
        ),
      );
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    }
  });

  it('a refused call is told when capacity frees (the bucket refill), not to lower max_tokens', async () => {
    const k = await memberKey({ input_tokens_per_minute: 60_000 });
    const body = claudeCodeBody(150_000, 9);
    const [first, second] = await Promise.all([
      claudeCodeCall(env.stack.gateway.url, k.key, body),
      claudeCodeCall(env.stack.gateway.url, k.key, body),
    ]);
    const refused = [first!, second!].find((a) => a.status === 429);
    expect([first!.status, second!.status].sort()).toEqual([200, 429]);
    expect(refused!.error).toMatchObject({ type: 'rate_limit_error' });
    expect(refused!.error!.message).toMatch(/60000 input tokens per minute/);
    expect(refused!.error!.message).toMatch(/admin of this account/);
    expect(refused!.error!.message).not.toMatch(/max_tokens/);
    const retryAfter = Number(refused!.headers.get('retry-after'));
    // About 43,000 tokens expected of a 60,000-a-minute bucket that holds 17,000: some 26 s, not a whole minute.
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThan(50);
    expect(refused!.headers.get('anthropic-ratelimit-input-tokens-limit')).toBe('60000');
    // The refusal is in the call log with its model and the limit that refused it.
    await env.stack.gateway.writer.flush();
    const log = (await admin(`/requests?api_key_id=${k.id}&status=429`)).body;
    expect(log.data).toEqual([
      expect.objectContaining({
        model: 'claude-opus-5-5',
        error_type: 'rate_limit_error',
        refusal: 'rate_limit:input_tokens',
      }),
    ]);
  });

  it('a wrong key is told not to retry: Claude Code otherwise retries a 401 for minutes', async () => {
    const wrong = await claudeCodeCall(
      env.stack.gateway.url,
      `kg_live_${'x'.repeat(40)}`,
      claudeCodeBody(1_000),
    );
    expect(wrong.status).toBe(401);
    expect(wrong.error).toMatchObject({ type: 'authentication_error' });
    expect(wrong.headers.get('x-should-retry')).toBe('false');
  });

  it('keys made for a service account take the plan default limits too (issue 29)', async () => {
    const sa = (await admin('/service_accounts', { name: `ci-${Date.now()}` })).body;
    const created = (await admin(`/service_accounts/${sa.id}/api_keys`, { kind: 'live' })).body;
    expect(created.limits).toMatchObject({
      requests_per_minute: 2000,
      input_tokens_per_minute: 2_000_000,
      output_tokens_per_minute: 400_000,
    });
  });

  it('a key the account API makes without limits can still say none', async () => {
    const k = await memberKey({
      requests_per_minute: null,
      input_tokens_per_minute: null,
      output_tokens_per_minute: null,
    });
    const got = (await admin(`/api_keys/${k.id}`)).body;
    expect(got.limits).toMatchObject({
      requests_per_minute: null,
      input_tokens_per_minute: null,
      output_tokens_per_minute: null,
    });
    // The plan's old combined limit is no default any more.
    expect(got.limits.tokens_per_minute).toBeNull();
  });
});
