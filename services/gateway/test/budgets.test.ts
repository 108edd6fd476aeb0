import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callAt, startStack, type Stack } from './harness';
import type { Gateway } from '../src/server';
import { ALLOW_LOOPBACK_RECEIVERS, startReceiver, type Receiver } from './webhook-receiver';
import { waitFor } from './kit/wait';

const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? null;

/**
 * A call of Opus 4.5 whose answer has `outputTokens` output tokens: 400 of them cost one cent.
 * Its max_tokens is that many, so a hard cap holds about a cent more than it spends (its input
 * ceiling: the body's bytes and the tools' prompt allowance at the 1-hour cache-write rate).
 */
function spend(base: string, key: string, outputTokens = 40) {
  return api(base, '/v1/messages', {
    bearer: key,
    headers: { 'x-emulator-output-tokens': String(outputTokens) },
    body: { model: 'claude-opus-4-5', max_tokens: outputTokens, messages: [{ role: 'user', content: 'hi' }] },
  });
}

async function setup(stack: Stack) {
  const acct = await stack.seedAccount();
  const base = stack.gateway.url;
  const member = async (email: string) =>
    (await api(base, '/v1/organizations/users', { key: acct.adminKey, body: { email } })).body.id as string;
  const key = async (memberId?: string) =>
    (
      await api(base, '/v1/organizations/api_keys', {
        key: acct.adminKey,
        body: memberId ? { member_id: memberId } : {},
      })
    ).body as { id: string; key: string };
  const budget = (body: object) => api(base, '/v1/organizations/budgets', { key: acct.adminKey, body });
  /** Spend already in the rollups this month (seeded once when a budget is first checked). */
  const spent = (keyId: string, memberId: string | null, outputTokens: number) =>
    stack.gateway.store.calls.insertBatch([
      callAt(acct.id, new Date().toISOString(), { keyId, memberId, usage: { output_tokens: outputTokens } }),
    ]);
  return { acct, member, key, budget, spent };
}

/** Records the gateway's call log has taken so far (written, waiting, or refused). */
function taken(g: Gateway): number {
  const s = g.writer.status();
  return s.written + s.queued + s.rejected + s.dropped;
}

/**
 * Makes a call through `g` and waits until it is charged: a call is charged as its record is
 * made (right after its answer, with the call log taking it), then in Redis; every gateway
 * in `others` settles too.
 */
async function charged<T>(g: Gateway, call: () => Promise<T>, ...others: Gateway[]): Promise<T> {
  const before = taken(g);
  const res = await call();
  await waitFor(() => taken(g) > before, { timeout: 5_000, what: 'the call to be recorded' });
  await Promise.all([g, ...others].map((x) => x.limits.admission.settled()));
  return res;
}

describe('budgets', () => {
  let stack: Stack;
  const receivers: Receiver[] = [];
  beforeAll(async () => {
    stack = await startStack({ KEYGATE_WEBHOOK_POLL_MS: '50', ...ALLOW_LOOPBACK_RECEIVERS });
  });
  afterAll(async () => {
    for (const r of receivers) await r.close();
    await stack?.close();
  });

  it('an account budget counts every key and member; its hard cap answers 429 that says not to retry', async () => {
    const s = await setup(stack);
    const [m1, m2] = [await s.member('a@b.test'), await s.member('c@d.test')];
    const [k1, k2, k3] = [await s.key(m1), await s.key(m2), await s.key()];
    // The strict hold: each call holds the most it can cost while it runs.
    expect(
      (await s.budget({ scope: 'account', limit_cents: 100, period: 'daily', hold: 'ceiling' })).status,
    ).toBe(201);
    // 97.5 cents spent by two members' keys before this instance looked.
    await s.spent(k1.id, m1, 20_000);
    await s.spent(k2.id, m2, 19_000);
    expect((await charged(stack.gateway, () => spend(stack.gateway.url, k3.key, 400))).status).toBe(200);
    // 1.5 cents left, less than this call may cost.
    const res = await spend(stack.gateway.url, k1.key, 400);
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({
      type: 'error',
      error: { type: 'billing_error' },
      request_id: expect.stringMatching(/^req_/),
    });
    expect(res.body.error.message).toMatch(
      /may cost up to \$0\.0\d .*, more than the \$0\.01 left of the account's daily budget 'daily account budget' of \$1\.00 \(bdg_\w+\): \$0\.9\d is spent or held by calls in flight since .*\. It resets at .*\. An admin of this account can raise it/,
    );
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect(res.headers.get('retry-after')).toBeNull();
    expect(res.headers.get('request-id')).toMatch(/^req_/);
  });

  it("a member budget counts all the member's keys, and no one else's", async () => {
    const s = await setup(stack);
    const [m1, m2] = [await s.member('m1@x.test'), await s.member('m2@x.test')];
    const [a, b, other] = [await s.key(m1), await s.key(m1), await s.key(m2)];
    expect((await s.budget({ scope: 'user', target_id: m1, limit_cents: 100, hold: 'ceiling' })).status).toBe(
      201,
    );
    await s.spent(a.id, m1, 39_000);
    expect((await charged(stack.gateway, () => spend(stack.gateway.url, b.key, 400))).status).toBe(200);
    expect((await spend(stack.gateway.url, a.key, 400)).status).toBe(429);
    expect((await spend(stack.gateway.url, b.key, 400)).body.error.message).toMatch(
      /member's monthly budget/,
    );
    expect((await spend(stack.gateway.url, other.key, 400)).status).toBe(200);
  });

  it('soft thresholds fire once each per period, as signed webhooks; the progress shows them', async () => {
    const s = await setup(stack);
    const receiver = await startReceiver();
    receivers.push(receiver);
    const hook = await api(stack.gateway.url, '/v1/organizations/webhooks', {
      key: s.acct.adminKey,
      body: { url: receiver.url, events: ['budget.threshold_crossed'] },
    });
    receiver.useSecret(hook.body.secret);
    const k = await s.key();
    const created = await s.budget({
      scope: 'api_key',
      target_id: k.id,
      limit_cents: 100,
      hard_cap: false,
      thresholds_percent: [80, 50, 100],
      name: 'ci key',
    });
    expect(created.body).toMatchObject({
      thresholds_percent: [50, 80, 100],
      hard_cap: false,
      progress: { spent_cents: 0, percent: 0 },
    });
    // 40 cents, then 20 (past 50%), then 25 (past 80%), then 30 (past 100%, and no refusal): 115 cents.
    for (const tokens of [16_000, 8_000, 10_000, 12_000, 400]) {
      expect((await charged(stack.gateway, () => spend(stack.gateway.url, k.key, tokens))).status).toBe(200);
    }
    await receiver.waitFor((r) => r.length === 3);
    // Every crossing is charged by now (charged() above): once no delivery is pending, none is coming.
    const deliveries = await waitFor(
      async () => {
        const { data } = (
          await api(stack.gateway.url, `/v1/organizations/webhooks/${hook.body.id}/deliveries`, {
            key: s.acct.adminKey,
          })
        ).body;
        return data.every((d: { status: string }) => d.status !== 'pending') && (data as unknown[]);
      },
      { timeout: 5_000, interval: 50, what: 'the deliveries to settle' },
    );
    expect(deliveries).toHaveLength(3);
    // The worker sends due deliveries side by side, so they may arrive in any order.
    const received = [...receiver.received].sort(
      (a, b) => a.event.data.threshold_percent - b.event.data.threshold_percent,
    );
    expect(received.map((r) => [r.event.type, r.event.data.threshold_percent, r.verified])).toEqual([
      ['budget.threshold_crossed', 50, true],
      ['budget.threshold_crossed', 80, true],
      ['budget.threshold_crossed', 100, true],
    ]);
    // 85 cents of output, plus the few input tokens of three calls.
    expect(received[1]!.event.data).toMatchObject({
      budget_id: created.body.id,
      budget_name: 'ci key',
      scope: 'api_key',
      target_id: k.id,
      limit_cents: 100,
      period: 'monthly',
    });
    expect(received[1]!.event.data.spent_cents).toBeGreaterThanOrEqual(85);
    expect(received[1]!.event.data.spent_cents).toBeLessThan(85.1);
    await stack.gateway.writer.flush();
    const progress = (
      await api(stack.gateway.url, `/v1/organizations/budgets/${created.body.id}`, { key: s.acct.adminKey })
    ).body.progress;
    // The progress equals the call log priced directly (Opus 4.5: $5 input, $25 output per million tokens).
    const [sums] = await stack.gateway.store.db
      .sql`select sum(input_tokens)::float8 as i, sum(output_tokens)::float8 as o from calls where key_id = ${k.id}`;
    const expected = (sums!.i * 5 + sums!.o * 25) / 10_000;
    expect(sums!.o).toBe(46_400);
    expect(progress.spent_cents).toBeCloseTo(expected, 6);
    expect(progress).toMatchObject({
      limit_cents: 100,
      percent: Math.round(expected * 100) / 100,
      exhausted: false,
    });
    expect(progress.thresholds.map((t: any) => [t.percent, typeof t.crossed_at])).toEqual([
      [50, 'string'],
      [80, 'string'],
      [100, 'string'],
    ]);
    expect(Date.parse(progress.period_end) - Date.parse(progress.period_start)).toBeGreaterThanOrEqual(
      28 * 86_400_000,
    );
  });

  it('a new or raised budget reaches every instance within a second', async () => {
    const peer = await stack.startPeer();
    const s = await setup(stack);
    const k = await s.key();
    expect((await spend(peer.url, k.key)).status).toBe(200);
    const b = await s.budget({ scope: 'api_key', target_id: k.id, limit_cents: 0 });
    await waitFor(async () => (await spend(peer.url, k.key)).status === 429, {
      timeout: 1_000,
      what: 'the peer to apply the new budget',
    });
    await api(stack.gateway.url, `/v1/organizations/budgets/${b.body.id}`, {
      key: s.acct.adminKey,
      body: { limit_cents: 1_000 },
    });
    await waitFor(async () => (await spend(peer.url, k.key)).status === 200, {
      timeout: 1_000,
      what: 'the peer to apply the raised budget',
    });
    await api(stack.gateway.url, `/v1/organizations/budgets/${b.body.id}`, {
      key: s.acct.adminKey,
      method: 'DELETE',
    });
  });

  it('validates budgets at the edge and keeps them to the account', async () => {
    const s = await setup(stack);
    const other = await setup(stack);
    const foreignKey = await other.key();
    const cases: [object, number, RegExp][] = [
      [{ scope: 'user', limit_cents: 5 }, 400, /target_id: a user budget names its member/],
      [
        { scope: 'account', target_id: 'user_x', limit_cents: 5 },
        400,
        /target_id: an account budget has no target/,
      ],
      [{ scope: 'api_key', target_id: foreignKey.id, limit_cents: 5 }, 404, /no API key/],
      [{ scope: 'api_key', target_id: s.acct.adminKeyId, limit_cents: 5 }, 400, /admin keys/],
      [{ scope: 'account', limit_cents: -1 }, 400, /limit_cents/],
      [{ scope: 'account', limit_cents: 5, period: 'hourly' }, 400, /period/],
      [{ scope: 'account', limit_cents: 5, thresholds_percent: [0] }, 400, /thresholds_percent/],
      [{ scope: 'account', limit_cents: 5, extra: 1 }, 400, /extra/],
    ];
    for (const [body, status, message] of cases) {
      const res = await s.budget(body);
      expect([res.status, res.body.error?.message]).toEqual([status, expect.stringMatching(message)]);
    }
    const mine = (await s.budget({ scope: 'account', limit_cents: 5 })).body.id;
    expect(
      (await api(stack.gateway.url, `/v1/organizations/budgets/${mine}`, { key: other.acct.adminKey }))
        .status,
    ).toBe(404);
    expect(
      (
        await api(stack.gateway.url, `/v1/organizations/budgets/${mine}`, {
          key: other.acct.adminKey,
          method: 'DELETE',
        })
      ).status,
    ).toBe(404);
    const list = (await api(stack.gateway.url, '/v1/organizations/budgets', { key: s.acct.adminKey })).body;
    expect(list.data.map((b: any) => b.id)).toEqual([mine]);
    expect(
      (
        await api(stack.gateway.url, `/v1/organizations/budgets/${mine}`, {
          key: s.acct.adminKey,
          method: 'DELETE',
        })
      ).body,
    ).toEqual({ id: mine, type: 'budget_deleted' });
  });

  it('budgets and webhooks answer admin keys only', async () => {
    const s = await setup(stack);
    const app = await s.key();
    for (const path of ['/v1/organizations/budgets', '/v1/organizations/webhooks']) {
      for (const key of [undefined, app.key, `kg_admin_${'x'.repeat(40)}`]) {
        const res = await api(stack.gateway.url, path, key ? { key } : {});
        expect([path, res.status, res.body.error.type]).toEqual([path, 401, 'authentication_error']);
      }
    }
  });
});

describe.runIf(TEST_REDIS_URL)('budgets shared through Redis (TEST_REDIS_URL)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ REDIS_URL: TEST_REDIS_URL! });
  });
  afterAll(() => stack?.close());

  it('two instances count one account budget together', async () => {
    const peer = await stack.startPeer();
    const s = await setup(stack);
    const [k1, k2] = [await s.key(), await s.key()];
    await s.budget({ scope: 'account', limit_cents: 100 });
    // Each instance spends 40 cents: alone, neither would refuse a third such call.
    expect((await charged(stack.gateway, () => spend(stack.gateway.url, k1.key, 16_000), peer)).status).toBe(
      200,
    );
    expect((await charged(peer, () => spend(peer.url, k2.key, 16_000), stack.gateway)).status).toBe(200);
    expect((await spend(stack.gateway.url, k2.key, 16_000)).status).toBe(429);
    expect((await spend(peer.url, k1.key, 16_000)).status).toBe(429);
  });
});
