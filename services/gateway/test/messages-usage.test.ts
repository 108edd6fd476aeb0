import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callAt, callModel, startStack, type SeededAccount, type Stack } from './harness';

let stack: Stack;
let acct: SeededAccount;
let key: { id: string; key: string };

beforeAll(async () => {
  stack = await startStack();
  acct = await stack.seedAccount({ name: 'Messages only' });
  key = (
    await api(stack.gateway.url, '/v1/organizations/api_keys', {
      key: acct.adminKey,
      body: { name: 'mixed' },
    })
  ).body;
  const url = stack.gateway.url;
  const model = 'claude-opus-4-5';
  expect((await callModel(url, key.key)).status).toBe(200);
  for (let i = 0; i < 3; i++) await api(url, `/v1/models/${model}`, { bearer: key.key });
  for (let i = 0; i < 2; i++) {
    const counted = await api(url, '/v1/messages/count_tokens', {
      bearer: key.key,
      body: { model, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(counted.status).toBe(200);
  }
  // Refused by the gateway itself (no max_tokens): never reaches the provider.
  const refused = await api(url, '/v1/messages', {
    bearer: key.key,
    body: { model, messages: [{ role: 'user', content: 'hi' }] },
  });
  expect(refused.status).toBe(400);
  await stack.gateway.writer.flush();
});
afterAll(() => stack?.close());

const get = (path: string) => api(stack.gateway.url, path, { key: acct.adminKey }).then((r) => r.body);
const today = () => new Date().toISOString().slice(0, 10);

describe('the messages usage report counts messages calls only', () => {
  it('not count_tokens calls or model listings; a refusal is a request and an error', async () => {
    const report = await get(
      `/v1/organizations/usage_report/messages?starting_at=${today()}&group_by[]=api_key_id`,
    );
    expect(report.data.flatMap((b: any) => b.results)).toEqual([
      expect.objectContaining({ api_key_id: key.id, requests: 2, errors: 1 }),
    ]);
  });

  it('minute buckets (from the call log) agree', async () => {
    const from = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 30 * 60_000).toISOString();
    const report = await get(
      `/v1/organizations/usage_report/messages?starting_at=${from}&bucket_width=1m&limit=60&group_by[]=api_key_id`,
    );
    const results = report.data.flatMap((b: any) => b.results);
    expect(results.reduce((n: number, r: any) => n + r.requests, 0)).toBe(2);
    expect(results.reduce((n: number, r: any) => n + r.errors, 0)).toBe(1);
  });

  it('the usage summary agrees', async () => {
    const summary = await get('/v1/organizations/usage_summary?by=key');
    expect(summary.data).toEqual([expect.objectContaining({ api_key_id: key.id, requests: 2, errors: 1 })]);
  });

  it("a key's month-to-date spend is seeded from messages calls only", async () => {
    const other = await stack.seedAccount();
    const at = new Date().toISOString();
    await stack.gateway.store.calls.insertBatch([
      callAt(other.id, at, { keyId: other.adminKeyId, usage: { input_tokens: 10, output_tokens: 5 } }),
      callAt(other.id, at, {
        keyId: other.adminKeyId,
        endpoint: 'count_tokens',
        usage: { input_tokens: 1000 },
      }),
    ]);
    const rows = await stack.gateway.store.usage.keyUsageByModel(
      other.adminKeyId,
      new Date(Date.now() - 3_600_000),
    );
    expect(rows).toEqual([expect.objectContaining({ requests: 1, input_tokens: 10, output_tokens: 5 })]);
  });
});
