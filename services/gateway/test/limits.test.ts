import { BUNDLED_CATALOG } from '../src/pricing/catalog/catalog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedMicroUsd } from '../src/admission/ceiling';
import { CallEstimates } from '../src/admission/estimate';
import { api, callAt, callModel, startStack, type SeededAccount, type Stack } from './harness';
import { waitFor } from './kit/wait';

/** Waits until the key's call is recorded: its tokens and cost are charged as the record is made. */
async function charged(stack: Stack, keyId: string): Promise<void> {
  await waitFor(
    async () => {
      await stack.gateway.writer.flush();
      const [row] = await stack.gateway.store.db.sql<{ n: number }[]>`
        select count(*)::int as n from calls where key_id = ${keyId}`;
      return row!.n > 0;
    },
    { timeout: 5_000, what: `the call of ${keyId} to be recorded` },
  );
  await stack.gateway.limits.admission.settled();
}

const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? null;

/**
 * Output tokens of Opus 4.5 (25 micro-USD each) that leave a 1-dollar cap just what one callModel()
 * is expected to cost on a key's first call (later calls, knowing the key, expect no more).
 */
function spentBeforeOneCall(): number {
  const body = { model: 'claude-opus-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] };
  const size = {
    model: body.model,
    inputBytes: JSON.stringify(body).length,
    pdfPages: 0,
    maxTokens: body.max_tokens,
  };
  const expected = expectedMicroUsd(
    BUNDLED_CATALOG,
    body.model,
    new CallEstimates().estimate('key', 'req', size),
  );
  return Math.floor((1_000_000 - expected) / 25);
}

async function keyWith(stack: Stack, acct: SeededAccount, limits: object) {
  return (
    await api(stack.gateway.url, '/v1/organizations/api_keys', { key: acct.adminKey, body: { limits } })
  ).body as { id: string; key: string };
}

describe('per-key limits, counted in this process', () => {
  let stack: Stack;
  let acct: SeededAccount;
  beforeAll(async () => {
    stack = await startStack();
    acct = await stack.seedAccount();
  });
  afterAll(() => stack?.close());

  it('requests per minute: 429 rate_limit_error with retry-after and the rate-limit headers', async () => {
    const k = await keyWith(stack, acct, { requests_per_minute: 3 });
    for (let i = 0; i < 3; i++) expect((await callModel(stack.gateway.url, k.key)).status).toBe(200);
    const res = await callModel(stack.gateway.url, k.key);
    expect(res.status).toBe(429);
    expect(res.body.error).toMatchObject({
      type: 'rate_limit_error',
      message: expect.stringMatching(/3 requests per minute/),
    });
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(20);
    expect(res.headers.get('anthropic-ratelimit-requests-limit')).toBe('3');
    expect(res.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    expect(Date.parse(res.headers.get('anthropic-ratelimit-requests-reset')!)).toBeGreaterThan(Date.now());
    // The refusal is in the call log, like any call.
    await stack.gateway.writer.flush();
    const log = (
      await api(stack.gateway.url, `/v1/organizations/requests?api_key_id=${k.id}&status=429`, {
        key: acct.adminKey,
      })
    ).body;
    expect(log.data).toEqual([expect.objectContaining({ error_type: 'rate_limit_error' })]);
  });

  it('tokens per minute: a call that spent the budget makes the next wait', async () => {
    const k = await keyWith(stack, acct, { tokens_per_minute: 20 });
    expect((await callModel(stack.gateway.url, k.key)).status).toBe(200);
    await charged(stack, k.id);
    const res = await callModel(stack.gateway.url, k.key);
    expect(res.status).toBe(429);
    expect(res.body.error.message).toMatch(/20 tokens per minute/);
    expect(res.headers.get('anthropic-ratelimit-tokens-limit')).toBe('20');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('monthly spend cap: 429 billing_error without retry-after once the month-to-date spend (seeded from rollups) reaches it', async () => {
    const k = await keyWith(stack, acct, { monthly_spend_cap_cents: 100 });
    // Spent this month: all but one call's ceiling; the call then spends a little of it.
    const now = new Date().toISOString();
    await stack.gateway.store.calls.insertBatch([
      callAt(acct.id, now, { keyId: k.id, usage: { input_tokens: 0, output_tokens: spentBeforeOneCall() } }),
    ]);
    expect((await callModel(stack.gateway.url, k.key)).status).toBe(200);
    await charged(stack, k.id);
    const res = await callModel(stack.gateway.url, k.key);
    expect(res.status).toBe(429);
    expect(res.body.error).toMatchObject({
      type: 'billing_error',
      message: expect.stringMatching(/monthly spend cap of \$1\.00/),
    });
    expect(res.headers.get('retry-after')).toBeNull();
    expect(res.headers.get('x-should-retry')).toBe('false');
  });

  it('raising a limit applies to the next call', async () => {
    const k = await keyWith(stack, acct, { requests_per_minute: 1 });
    expect((await callModel(stack.gateway.url, k.key)).status).toBe(200);
    expect((await callModel(stack.gateway.url, k.key)).status).toBe(429);
    await api(stack.gateway.url, `/v1/organizations/api_keys/${k.id}`, {
      key: acct.adminKey,
      body: { limits: { requests_per_minute: null } },
    });
    expect((await callModel(stack.gateway.url, k.key)).status).toBe(200);
  });

  it('keys without limits are never refused', async () => {
    const k = await keyWith(stack, acct, {});
    const statuses = await Promise.all(
      Array.from({ length: 20 }, () => callModel(stack.gateway.url, k.key).then((r) => r.status)),
    );
    expect(new Set(statuses)).toEqual(new Set([200]));
  });
});

describe.runIf(TEST_REDIS_URL)('per-key limits shared through Redis (TEST_REDIS_URL)', () => {
  let stack: Stack;
  let acct: SeededAccount;
  beforeAll(async () => {
    stack = await startStack({ REDIS_URL: TEST_REDIS_URL! });
    acct = await stack.seedAccount();
  });
  afterAll(() => stack?.close());

  it('two instances share one request budget', async () => {
    const peer = await stack.startPeer();
    expect(stack.gateway.limits.shared).toBe('redis');
    const k = await keyWith(stack, acct, { requests_per_minute: 3 });
    expect((await callModel(stack.gateway.url, k.key)).status).toBe(200);
    expect((await callModel(peer.url, k.key)).status).toBe(200);
    expect((await callModel(stack.gateway.url, k.key)).status).toBe(200);
    const res = await callModel(peer.url, k.key);
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).not.toBeNull();
  });

  it('two instances share one month-to-date spend', async () => {
    const peer = await stack.startPeer();
    const k = await keyWith(stack, acct, { monthly_spend_cap_cents: 100 });
    await stack.gateway.store.calls.insertBatch([
      callAt(acct.id, new Date().toISOString(), {
        keyId: k.id,
        usage: { output_tokens: spentBeforeOneCall() },
      }),
    ]);
    expect((await callModel(stack.gateway.url, k.key)).status).toBe(200);
    await charged(stack, k.id);
    const res = await callModel(peer.url, k.key);
    expect(res.status).toBe(429);
    expect(res.headers.get('x-should-retry')).toBe('false');
  });
});
