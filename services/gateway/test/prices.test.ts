import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unpricedModels, usageBy, type ReportScope } from '../src/dashboard/data';
import type { AccountViewer, DashboardDeps } from '../src/dashboard/env';
import { parseState, rangeOf } from '../src/dashboard/view-state';
import type { CallRecord } from '../src/lib/call-record';
import { api, callAt, startStack, type Stack } from './harness';

// The provider's published rates, USD per million tokens, read 2026-11-25 from
// platform.claude.com/docs/en/models/<model>/overview and /docs/en/about-claude/pricing; fast
// mode on Opus 4.8 from code.claude.com/docs/en/fast-mode ($10 / $50, 2× standard). Written out
// here by hand, apart from the gateway's catalog, so the test compares two computations.
type Rates = { in: number; w5: number; w1: number; read: number; out: number };
const OPUS_5_5: Rates = { in: 4, w5: 5, w1: 8, read: 0.2, out: 20 };
const HAIKU_5_5: Rates = { in: 0.1, w5: 0.125, w1: 0.2, read: 0.01, out: 0.5 };
const HAIKU_5_5_OVER_100K: Rates = { in: 0.5, w5: 0.625, w1: 1, read: 0.05, out: 2.5 };
const OPUS_4_8_FAST: Rates = { in: 10, w5: 12.5, w1: 20, read: 1, out: 50 };
const SONNET_4_6: Rates = { in: 3, w5: 3.75, w1: 6, read: 0.3, out: 15 };
const SEARCH_CENTS = 1; // $10 per 1,000 searches
const US_ONLY = 1.1;
// What an operator sets for a model the catalog leaves unpriced (illustrative rates).
const MYTHOS_PREVIEW: Rates = { in: 25, w5: 31.25, w1: 50, read: 2.5, out: 125 };

interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  server_tool_use?: { web_search_requests: number };
  speed?: string;
  inference_geo?: string | null;
}

/** Cents of one call by hand: tokens × USD per MTok / 10,000, searches at a cent each. */
const byHand = (u: Usage, r: Rates, x = 1) =>
  ((u.input_tokens * r.in +
    u.cache_creation.ephemeral_5m_input_tokens * r.w5 +
    u.cache_creation.ephemeral_1h_input_tokens * r.w1 +
    u.cache_read_input_tokens * r.read +
    u.output_tokens * r.out) *
    x) /
    10_000 +
  (u.server_tool_use?.web_search_requests ?? 0) * SEARCH_CENTS;

const TOKEN = 'operator-token-0123456789';
// Calls through the proxy are stamped with the real time: reports cover today (UTC).
const TODAY = new Date().toISOString().slice(0, 10);
const TOMORROW = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
let stack: Stack;
let admin: string;
const calls: { id: string; model: string; usage: Usage; cents: number | null }[] = [];

async function call(
  model: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  const { text, ...body } = extra as { text?: string };
  const res = await api(stack.gateway.url, '/v1/messages', {
    bearer: stack.appKey,
    headers,
    body: {
      model,
      max_tokens: 256,
      messages: [{ role: 'user', content: text ?? 'Price this call.' }],
      ...body,
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { id: res.body.id as string, usage: res.body.usage as Usage };
}

async function priced(model: string, rates: Rates | null, extra = {}, headers = {}, x = 1) {
  const r = await call(model, extra, headers);
  calls.push({ ...r, model, cents: rates ? byHand(r.usage, rates, x) : null });
  return r;
}

const costReport = async (from: string, to: string, q = '') =>
  (
    await api(stack.gateway.url, `/v1/organizations/cost_report?starting_at=${from}&ending_at=${to}${q}`, {
      key: admin,
    })
  ).body;
const dayTotal = (bucket: { results: { amount: string }[] }) =>
  bucket.results.reduce((s, r) => s + Number(r.amount), 0);
const expected = (pred: (c: (typeof calls)[number]) => boolean) =>
  calls.filter(pred).reduce((s, c) => s + (c.cents ?? 0), 0);

async function dashboardScope(): Promise<ReportScope> {
  // The gateway's operator rows, as its own price book read them.
  await stack.deps.prices.reload();
  const deps = {
    ...stack.deps,
    resolver: undefined as never,
    operatorToken: null,
    billing: undefined as never,
  };
  const viewer: AccountViewer = {
    kind: 'admin',
    accountId: stack.account.id,
    keyId: 'k',
    memberId: null,
    csrf: 'x',
  };
  const range = rangeOf(parseState({ period: 'custom', from: TODAY, to: TODAY }), Date.now(), 'UTC');
  return { deps: deps as DashboardDeps, viewer, range, state: parseState({}) };
}

beforeAll(async () => {
  stack = await startStack();
  admin = (await stack.newKey({ kind: 'admin' })).secret;
  // Day 1: each model family and dimension once.
  await priced('claude-opus-5-5', OPUS_5_5);
  await priced('claude-opus-5-5', OPUS_5_5, {}, { 'x-emulator-scenario': 'cache_write_5m' });
  await priced('claude-opus-5-5', OPUS_5_5, {}, { 'x-emulator-scenario': 'cache_write_1h' });
  await priced('claude-opus-5-5', OPUS_5_5, {}, { 'x-emulator-scenario': 'cache_read' });
  await priced('claude-opus-5-5', OPUS_5_5, { inference_geo: 'us' }, {}, US_ONLY);
  await priced('claude-haiku-5-5', HAIKU_5_5, { text: 'short prompt' });
  // About 105,000 tokens of prompt (the emulator counts a token per 4 characters).
  await priced('claude-haiku-5-5', HAIKU_5_5_OVER_100K, { text: 'word '.repeat(84_000) });
  await priced('claude-opus-4-8', OPUS_4_8_FAST, { speed: 'fast' });
  await priced('claude-sonnet-4-6', SONNET_4_6, {
    text: 'search the web for prices',
    tools: [{ type: 'web_search_20250305', name: 'web_search' }],
  });
  await stack.calls();
}, 60_000);
afterAll(() => stack?.close());

describe('cost at the published price, per family and dimension', () => {
  it('the calls exercised every dimension', () => {
    const us = calls.map((c) => c.usage);
    expect(us.some((u) => u.cache_creation.ephemeral_5m_input_tokens > 0)).toBe(true);
    expect(us.some((u) => u.cache_creation.ephemeral_1h_input_tokens > 0)).toBe(true);
    expect(us.some((u) => u.cache_read_input_tokens > 0)).toBe(true);
    expect(us.some((u) => u.input_tokens > 100_000)).toBe(true);
    expect(us.some((u) => u.speed === 'fast')).toBe(true);
    expect(us.some((u) => u.inference_geo === 'us')).toBe(true);
    expect(us.some((u) => (u.server_tool_use?.web_search_requests ?? 0) > 0)).toBe(true);
  });

  it('cost_report per model equals the hand figures, and the day equals their sum', async () => {
    const report = await costReport(TODAY, TOMORROW, '&group_by[]=model');
    const items = report.data[0].results as { model: string; amount: string }[];
    for (const model of new Set(calls.map((c) => c.model))) {
      const amount = items.filter((i) => i.model === model).reduce((s, i) => s + Number(i.amount), 0);
      expect(amount, model).toBeCloseTo(
        expected((c) => c.model === model),
        6,
      );
    }
    expect(dayTotal(report.data[0])).toBeCloseTo(
      expected(() => true),
      6,
    );
    expect(report.unpriced_models).toEqual([]);
  });

  it('the call log gives each call its own hand figure', async () => {
    const log = await api(stack.gateway.url, '/v1/organizations/requests?limit=100', { key: admin });
    for (const c of calls) {
      const entry = log.body.data.find(
        (r: { upstream_message_id: string }) => r.upstream_message_id === c.id,
      );
      expect(entry.cost.unpriced, c.model).toBe(false);
      expect(Number(entry.cost.amount), c.model).toBeCloseTo(c.cents!, 6);
    }
  });

  it("the dashboard's model table shows the same cents", async () => {
    const lines = await usageBy(await dashboardScope(), 'model');
    expect(lines.map((l) => l.id).sort()).toEqual([...new Set(calls.map((c) => c.model))].sort());
    for (const line of lines)
      expect(line.costCents, String(line.id)).toBeCloseTo(
        expected((c) => c.model === line.id),
        6,
      );
    expect(await unpricedModels(await dashboardScope())).toEqual([]);
  });
});

describe("the provider's analytics endpoints", () => {
  const analytics = (path: string, beta = true) =>
    api(stack.gateway.url, `/v1/organizations/analytics/${path}`, {
      key: admin,
      headers: beta ? { 'anthropic-beta': 'analytics-usage-cost-2026-08-24' } : {},
    });

  it('usage by model, speed and inference geo; cost by model equals the hand figures', async () => {
    const range = `starting_at=${TODAY}T00:00:00Z&ending_at=${TOMORROW}T00:00:00Z`;
    const usage = await analytics(
      `usage?${range}&group_by[]=model&group_by[]=speed&group_by[]=inference_geo&limit=100`,
    );
    expect(usage.status, JSON.stringify(usage.body)).toBe(200);
    type Row = { group: Record<string, string | null>; usage: { requests: number } };
    const fast = usage.body.data.find((r: Row) => r.group.model === 'claude-opus-4-8');
    expect(fast.group.speed).toBe('fast');
    expect(fast.usage.requests).toBe(1);
    const us = usage.body.data.find((r: Row) => r.group.inference_geo === 'us');
    expect(us.group.model).toBe('claude-opus-5-5');
    expect(us.usage.requests).toBe(1);
    const cost = await analytics(`cost?${range}&group_by[]=model&limit=100`);
    expect(cost.status).toBe(200);
    for (const model of new Set(calls.map((c) => c.model))) {
      const row = cost.body.data.find((r: { group: { model: string } }) => r.group.model === model);
      expect(row.cost.currency).toBe('USD');
      expect(Number(row.cost.amount), model).toBeCloseTo(
        expected((c) => c.model === model),
        6,
      );
    }
  });

  it('refuses a call without the beta header, in the provider error shape', async () => {
    const res = await analytics(`usage?starting_at=${TODAY}T00:00:00Z`, false);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });
});

describe('a model the catalog does not price', () => {
  it('is unpriced everywhere, a spend cap counts it at its family ceiling, and a price fills the past', async () => {
    // Mythos family ceiling in the catalog: $10 / $50 (Fable and Mythos 5, 5.1); 1,000 output
    // tokens estimate at 5 cents. Admission reserves each call's ceiling: max_tokens 1,000 at
    // $50 and the body plus 1,000 prompt tokens at the family's dearest input rate ($20, a
    // 1-hour cache write), 7.19 cents. A cap of 15 cents lets two calls through (5 spent +
    // 7.19 held) and stops the third (10 spent + 7.19 held).
    const key = stack.appKey;
    const patch = await api(stack.gateway.url, `/v1/organizations/api_keys/${stack.keyId}`, {
      key: admin,
      body: { limits: { monthly_spend_cap_cents: 100_000 } },
    });
    expect(patch.status).toBe(200);
    const capped = await stack.newKey();
    const setCap = await api(stack.gateway.url, `/v1/organizations/api_keys/${capped.id}`, {
      key: admin,
      body: { limits: { monthly_spend_cap_cents: 15 } },
    });
    expect(setCap.status).toBe(200);
    const mythos = (bearer: string) =>
      api(stack.gateway.url, '/v1/messages', {
        bearer,
        headers: { 'x-emulator-output-tokens': '1000' },
        body: {
          model: 'claude-mythos-preview',
          max_tokens: 1000,
          messages: [{ role: 'user', content: 'hi' }],
        },
      });
    expect((await mythos(capped.secret)).status).toBe(200);
    expect((await mythos(capped.secret)).status).toBe(200);
    const refused = await mythos(capped.secret);
    expect(refused.status).toBe(429);
    expect(refused.body.error.type).toBe('billing_error');
    const free = await mythos(key);
    expect(free.status).toBe(200);
    const records = await stack.calls();
    const mythosCalls = records.filter((r) => r.model === 'claude-mythos-preview' && r.status === 200);
    expect(mythosCalls).toHaveLength(3);

    const before = await costReport(TODAY, TOMORROW, '&group_by[]=model');
    expect(before.unpriced_models).toEqual([
      expect.objectContaining({
        model: 'claude-mythos-preview',
        requests: 3,
        output_tokens: mythosCalls.reduce((s, r) => s + r.output_tokens, 0),
      }),
    ]);
    expect(
      before.data[0].results.filter((i: { model: string }) => i.model === 'claude-mythos-preview'),
    ).toEqual([]);
    const log = await api(stack.gateway.url, '/v1/organizations/requests?limit=100', { key: admin });
    const entry = log.body.data.find(
      (r: { model: string; status: number }) => r.model === 'claude-mythos-preview' && r.status === 200,
    );
    expect(entry.cost).toEqual({ currency: 'USD', amount: null, unpriced: true });
    expect(await unpricedModels(await dashboardScope())).toEqual(['claude-mythos-preview']);

    const set = await api(stack.gateway.url, '/operator/v1/prices', {
      bearer: TOKEN,
      body: {
        prices: [
          {
            model: 'claude-mythos-preview',
            input: MYTHOS_PREVIEW.in,
            cache_write_5m: MYTHOS_PREVIEW.w5,
            cache_write_1h: MYTHOS_PREVIEW.w1,
            cache_read: MYTHOS_PREVIEW.read,
            output: MYTHOS_PREVIEW.out,
            source: 'set by the operator in the test',
          },
        ],
      },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(201);
    const after = await costReport(TODAY, TOMORROW, '&group_by[]=model');
    expect(after.unpriced_models).toEqual([]);
    const mythosItems = after.data[0].results.filter(
      (i: { model: string }) => i.model === 'claude-mythos-preview',
    );
    const hand = mythosCalls.reduce(
      (s, r) =>
        s +
        byHand(
          {
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            cache_read_input_tokens: r.cache_read_input_tokens,
            cache_creation: {
              ephemeral_5m_input_tokens: r.cache_creation_5m_tokens,
              ephemeral_1h_input_tokens: r.cache_creation_1h_tokens,
            },
          },
          MYTHOS_PREVIEW,
        ),
      0,
    );
    expect(dayTotal({ results: mythosItems })).toBeCloseTo(hand, 6);
    expect(await unpricedModels(await dashboardScope())).toEqual([]);
  });
});

describe('an effective-dated price change', () => {
  it('moves only the calls in its window; a batch call pays the batch rate', async () => {
    // Records as the call log keeps them, on days before today (the proxy stamps real time).
    const usage = {
      input_tokens: 1200,
      output_tokens: 300,
      cache_read_input_tokens: 5000,
      cache_creation_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      server_tool_use: { web_search_requests: 0 },
    };
    const at = (day: string, o: Pick<Partial<CallRecord>, 'batch'> = {}) =>
      callAt(stack.account.id, `${day}T12:00:00Z`, {
        model: 'claude-opus-5-5',
        keyId: stack.keyId,
        usage,
        ...o,
      });
    for (const r of [at('2026-11-18'), at('2026-11-19'), at('2026-11-19', { batch: true })])
      stack.gateway.writer.enqueue(r);
    await stack.calls();
    const day = async (d: string, next: string) => dayTotal((await costReport(d, next)).data[0]);
    expect(await day('2026-11-18', '2026-11-19')).toBeCloseTo(byHand(usage, OPUS_5_5), 9);
    // One standard call and one through the Message Batches API at half the input and output rates.
    expect(await day('2026-11-19', '2026-11-20')).toBeCloseTo(byHand(usage, OPUS_5_5) * 1.5, 9);

    const NEW: Rates = { in: 3, w5: 3.75, w1: 6, read: 0.15, out: 15 };
    const set = await api(stack.gateway.url, '/operator/v1/prices', {
      bearer: TOKEN,
      body: {
        prices: [
          {
            model: 'claude-opus-5-5',
            effective_from: '2026-11-19',
            input: NEW.in,
            cache_write_5m: NEW.w5,
            cache_write_1h: NEW.w1,
            cache_read: NEW.read,
            output: NEW.out,
          },
        ],
      },
    });
    expect(set.status).toBe(201);
    expect(await day('2026-11-18', '2026-11-19')).toBeCloseTo(byHand(usage, OPUS_5_5), 9);
    expect(await day('2026-11-19', '2026-11-20')).toBeCloseTo(byHand(usage, NEW) * 1.5, 9);
  });

  it('refuses a price the catalog cannot take, in the provider error shape', async () => {
    const bad = await api(stack.gateway.url, '/operator/v1/prices', {
      bearer: TOKEN,
      body: {
        prices: [
          { model: 'claude-x', input: -1, output: 1, cache_write_5m: 1, cache_write_1h: 1, cache_read: 1 },
        ],
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    const tier = await api(stack.gateway.url, '/operator/v1/prices', {
      bearer: TOKEN,
      body: {
        prices: [
          {
            model: 'claude-x',
            input: 1,
            output: 1,
            cache_write_5m: 1,
            cache_write_1h: 1,
            cache_read: 1,
            prompt_tiers: [
              {
                above_prompt_tokens: 123,
                input: 1,
                output: 1,
                cache_write_5m: 1,
                cache_write_1h: 1,
                cache_read: 1,
              },
            ],
          },
        ],
      },
    });
    expect(tier.status).toBe(400);
    expect(tier.body.error.message).toMatch(/above_prompt_tokens/);
  });

  it("imports LiteLLM's price file format", async () => {
    const res = await api(stack.gateway.url, '/operator/v1/prices', {
      bearer: TOKEN,
      body: {
        effective_from: '2026-11-01',
        litellm: {
          'claude-fable-5-2': {
            litellm_provider: 'anthropic',
            input_cost_per_token: 8e-6,
            output_cost_per_token: 4e-5,
            cache_creation_input_token_cost: 1e-5,
            cache_read_input_token_cost: 2e-7,
          },
          'bedrock/anthropic.claude-fable-5-2': { litellm_provider: 'bedrock', input_cost_per_token: 1 },
          'gpt-4o': { litellm_provider: 'openai', input_cost_per_token: 1, output_cost_per_token: 1 },
        },
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.added).toEqual([{ model: 'claude-fable-5-2', effective_from: '2026-11-01' }]);
    const listed = await api(stack.gateway.url, '/operator/v1/prices', { bearer: TOKEN });
    const fable = listed.body.data.find((m: { id: string }) => m.id === 'claude-fable-5-2');
    expect(fable.prices[0]).toMatchObject({
      input: 8,
      output: 40,
      cache_write_5m: 10,
      cache_write_1h: 16,
      cache_read: 0.2,
    });
  });
});
