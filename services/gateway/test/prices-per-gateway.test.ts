import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startStack, type Stack } from './harness';

// Claude Opus 5.5's list price, USD per million tokens (platform.claude.com/docs/en/about-claude/pricing,
// read 2026-11-25, as in prices.test.ts); the second gateway's operator sets twice that.
const LIST = { input: 4, output: 20 };
const DOUBLED = { input: 8, cache_write_5m: 10, cache_write_1h: 16, cache_read: 0.4, output: 40 };
const TOKEN = 'operator-token-0123456789';

let plain: Stack;
let repriced: Stack;

/** One identical call through a gateway, and its cost as that gateway's call log reports it. */
async function costOfOneCall(stack: Stack): Promise<{ amount: string; usage: Record<string, number> }> {
  const admin = (await stack.newKey({ kind: 'admin' })).secret;
  const res = await api(stack.gateway.url, '/v1/messages', {
    bearer: stack.appKey,
    body: { model: 'claude-opus-5-5', max_tokens: 64, messages: [{ role: 'user', content: 'price me' }] },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await stack.calls();
  const log = await api(stack.gateway.url, '/v1/organizations/requests?limit=10', { key: admin });
  const entry = log.body.data.find(
    (r: { upstream_message_id: string }) => r.upstream_message_id === res.body.id,
  );
  expect(entry?.cost?.unpriced).toBe(false);
  return { amount: entry.cost.amount, usage: entry.usage };
}

beforeAll(async () => {
  [plain, repriced] = await Promise.all([startStack(), startStack()]);
  const set = await api(repriced.gateway.url, '/operator/v1/prices', {
    bearer: TOKEN,
    body: { prices: [{ model: 'claude-opus-5-5', ...DOUBLED, source: 'set by the operator in the test' }] },
  });
  expect(set.status, JSON.stringify(set.body)).toBe(201);
}, 60_000);
afterAll(async () => {
  await Promise.all([plain?.close(), repriced?.close()]);
});

describe('each gateway prices with its own catalog', () => {
  it("two gateways in one process, one with an operator's row, price the same call differently", async () => {
    const a = await costOfOneCall(plain);
    const b = await costOfOneCall(repriced);
    expect(b.usage).toEqual(a.usage);
    const cents = (r: { input: number; output: number }, u: Record<string, number>) =>
      (u.input_tokens! * r.input + u.output_tokens! * r.output) / 10_000;
    expect(Number(a.amount)).toBeCloseTo(cents(LIST, a.usage), 6);
    expect(Number(b.amount)).toBeCloseTo(cents(DOUBLED, b.usage), 6);
    expect(Number(b.amount)).toBeCloseTo(2 * Number(a.amount), 6);
  });
});
