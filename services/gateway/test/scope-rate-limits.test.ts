import { describe, expect, it } from 'vitest';
import { api, useStackWithAccount } from './harness';
import { claudeCodeBody, claudeCodeCall } from './kit/claude-code-call';

/**
 * Issue 30: rate limits per member, RBAC group and account, beside each key's. A call is admitted
 * only if every limit that applies has room; a refusal names whose limit it is and when it frees;
 * each answer carries the headers of the tightest limit. Limits set through the API apply to the
 * very next call on the instance that took the write (no wait for the change notice).
 */
describe('rate limits of members, groups and the account', () => {
  const env = useStackWithAccount('team');

  const admin = (path: string, body?: unknown, method?: string) =>
    api(env.stack.gateway.url, `/v1/organizations${path}`, {
      key: env.acct.adminKey,
      body,
      ...(method ? { method } : {}),
    });
  const setLimits = async (scope: object, limits: object[]) => {
    const res = await admin('/rate_limits', { scope, limits });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };
  const small = (key: string) =>
    api(env.stack.gateway.url, '/v1/messages', {
      bearer: key,
      body: { model: 'claude-opus-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
    });

  async function member(): Promise<{ id: string; keys: string[] }> {
    const n = Math.random().toString(36).slice(2, 8);
    const m = (await admin('/users', { email: `dev-${n}@example.com` })).body;
    const keys = [];
    for (let i = 0; i < 2; i++) keys.push((await admin('/api_keys', { member_id: m.id })).body.key);
    return { id: m.id, keys };
  }

  it("a member's requests per minute hold across all their keys, and the refusal names the member's limit", async () => {
    const m = await member();
    const entry = await setLimits({ type: 'user', user_id: m.id }, [
      { type: 'requests_per_minute', value: 2 },
    ]);
    expect(entry).toMatchObject({
      type: 'rate_limit',
      scope: { type: 'user', user_id: m.id },
      limits: [{ type: 'requests_per_minute', value: 2 }],
      source: 'set',
    });
    const first = await small(m.keys[0]!);
    expect(first.status).toBe(200);
    // The member's 2 a minute is tighter than each key's plan default of 2000.
    expect(first.headers.get('anthropic-ratelimit-requests-limit')).toBe('2');
    expect(first.headers.get('anthropic-ratelimit-requests-remaining')).toBe('1');
    expect((await small(m.keys[1]!)).status).toBe(200);
    const refused = await small(m.keys[0]!);
    expect(refused.status).toBe(429);
    expect(refused.body.error.type).toBe('rate_limit_error');
    expect(refused.body.error.message).toMatch(
      /^This member's rate limit of 2 requests per minute is reached\./,
    );
    // One request refills every 30 s at 2 a minute: that is when capacity frees, not a whole minute.
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(25);
    expect(retryAfter).toBeLessThanOrEqual(30);
    expect(refused.headers.get('anthropic-ratelimit-requests-limit')).toBe('2');
    await env.stack.gateway.writer.flush();
    const log = (await admin(`/requests?user_id=${m.id}&status=429`)).body;
    expect(log.data.map((r: { refusal: string }) => r.refusal)).toEqual([`rate_limit:requests:user:${m.id}`]);
  });

  it("a group's input tokens per minute (cache reads not counted) refuse one of two parallel calls, naming the group", async () => {
    const m = await member();
    const group = (await admin('/rbac_groups', { name: `tight-${m.id.slice(-4)}` })).body;
    expect((await admin(`/rbac_groups/${group.id}/members`, { user_id: m.id })).status).toBe(200);
    await setLimits({ type: 'rbac_group', rbac_group_id: group.id }, [
      { type: 'input_tokens_per_minute', value: 60_000 },
    ]);
    const body = claudeCodeBody(150_000, 7);
    const answers = await Promise.all(m.keys.map((k) => claudeCodeCall(env.stack.gateway.url, k, body)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 429]);
    const ok = answers.find((a) => a.status === 200)!;
    expect(ok.headers.get('anthropic-ratelimit-input-tokens-limit')).toBe('60000');
    const refused = answers.find((a) => a.status === 429)!;
    expect(refused.error!.message).toMatch(
      new RegExp(
        `^The rate limit of group ${group.id} of 60000 input tokens per minute cannot take this call now`,
      ),
    );
    expect(refused.error!.message).toMatch(/cache reads are not counted/);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThan(60);
  });

  it("the account's output tokens per minute apply to every member; removing it frees the next call at once", async () => {
    const [a, b] = [await member(), await member()];
    const entry = await setLimits({ type: 'organization' }, [{ type: 'output_tokens_per_minute', value: 1 }]);
    // A call expects at least one output token: the first takes the whole bucket, the next waits.
    const body = claudeCodeBody(20_000, 3);
    expect((await claudeCodeCall(env.stack.gateway.url, a.keys[0]!, body)).status).toBe(200);
    const refused = await claudeCodeCall(env.stack.gateway.url, b.keys[0]!, body);
    expect(refused.status).toBe(429);
    expect(refused.error!.message).toMatch(/^This account's rate limit of 1 output tokens per minute/);
    expect(refused.headers.get('anthropic-ratelimit-output-tokens-limit')).toBe('1');
    const removed = await admin(`/rate_limits/${entry.id}`, undefined, 'DELETE');
    expect(removed.body).toEqual({ id: entry.id, type: 'rate_limit_deleted' });
    expect((await claudeCodeCall(env.stack.gateway.url, b.keys[0]!, body)).status).toBe(200);
  });

  it('a lowered member limit applies to the next call on the same instance', async () => {
    const m = await member();
    await setLimits({ type: 'user', user_id: m.id }, [{ type: 'requests_per_minute', value: 100 }]);
    expect((await small(m.keys[0]!)).status).toBe(200);
    await setLimits({ type: 'user', user_id: m.id }, [{ type: 'requests_per_minute', value: 1 }]);
    // The bucket of 100 is a new bucket of 1 for the new limit: one call, then a refusal.
    const after = await small(m.keys[0]!);
    expect(after.headers.get('anthropic-ratelimit-requests-limit')).toBe('1');
    expect((await small(m.keys[0]!)).status).toBe(429);
  });

  it('lists, gets, writes only the kinds named, audits, and removes', async () => {
    const m = await member();
    const set = await setLimits({ type: 'user', user_id: m.id }, [
      { type: 'requests_per_minute', value: 50 },
      { type: 'output_tokens_per_minute', value: 9_000 },
    ]);
    const changed = await setLimits({ type: 'user', user_id: m.id }, [
      { type: 'input_tokens_per_minute_cache_aware', value: 70_000 },
      { type: 'requests_per_minute', value: null },
    ]);
    expect(changed.id).toBe(set.id);
    expect(changed.limits).toEqual([
      { type: 'input_tokens_per_minute', value: 70_000 },
      { type: 'output_tokens_per_minute', value: 9_000 },
    ]);
    expect((await admin(`/rate_limits/${set.id}`)).body).toEqual(changed);
    const users = (await admin('/rate_limits?scope_type=user')).body.data;
    expect(users.map((e: { id: string }) => e.id)).toContain(set.id);
    // The plan's member default is listed as the plan's, and cannot be removed.
    const plan = users.find((e: { source: string }) => e.source === 'plan');
    expect(plan).toMatchObject({
      scope: { type: 'user', user_id: null },
      limits: [
        { type: 'requests_per_minute', value: 2000 },
        { type: 'input_tokens_per_minute', value: 2_000_000 },
        { type: 'output_tokens_per_minute', value: 400_000 },
      ],
      created_by: null,
    });
    const kept = await admin(`/rate_limits/${plan.id}`, undefined, 'DELETE');
    expect(kept.status).toBe(400);
    expect(kept.body.error.message).toMatch(/plan's default/);
    const audit = (await admin('/audit_log?limit=50')).body.data;
    expect(audit).toContainEqual(expect.objectContaining({ action: 'rate_limit.set', target_id: set.id }));
    expect((await admin(`/rate_limits/${set.id}`, undefined, 'DELETE')).status).toBe(200);
    expect((await admin(`/rate_limits/${set.id}`)).status).toBe(404);
    expect((await admin(`/rate_limits/${set.id}`, undefined, 'DELETE')).status).toBe(404);
  });

  it('refuses bad input with a clear error in the provider shape', async () => {
    const m = await member();
    const cases: [object, number, RegExp][] = [
      [
        { scope: { type: 'user', user_id: m.id }, limits: [{ type: 'bananas_per_minute', value: 1 }] },
        400,
        /type/,
      ],
      [
        { scope: { type: 'user', user_id: m.id }, limits: [{ type: 'requests_per_minute', value: 0 }] },
        400,
        /value/,
      ],
      [{ scope: { type: 'user', user_id: m.id }, limits: [] }, 400, /limits/],
      [
        {
          scope: { type: 'user', user_id: 'user_nobody' },
          limits: [{ type: 'requests_per_minute', value: 5 }],
        },
        404,
        /no active member 'user_nobody'/,
      ],
      [
        {
          scope: { type: 'rbac_group', rbac_group_id: 'grp_none' },
          limits: [{ type: 'requests_per_minute', value: 5 }],
        },
        404,
        /no RBAC group 'grp_none'/,
      ],
      [
        { scope: { type: 'organization' }, limits: [{ type: 'tokens_per_minute', value: 5 }] },
        400,
        /key-only limit/,
      ],
      [
        {
          scope: { type: 'api_key', api_key_id: 'key_nothere' },
          limits: [{ type: 'requests_per_minute', value: 5 }],
        },
        404,
        /key_nothere/,
      ],
    ];
    for (const [body, status, message] of cases) {
      const res = await admin('/rate_limits', body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.type).toBe('error');
      expect(res.body.error.message).toMatch(message);
    }
  });
});
