import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startStack, type Stack } from './harness';

// Published rates, USD per million tokens, read 2026-11-25 from
// https://platform.claude.com/docs/en/models/opus-5-5/overview, .../sonnet-5-5/overview,
// .../haiku-5-5/overview. Written out by hand, apart from the gateway's catalog.
const RATES: Record<string, { in: number; out: number }> = {
  'claude-opus-5-5': { in: 4, out: 20 },
  'claude-sonnet-5-5': { in: 2, out: 10 },
  'claude-haiku-5-5': { in: 0.1, out: 0.5 },
};
const BETA = 'analytics-usage-cost-2026-08-24';
const TODAY = new Date().toISOString().slice(0, 10);
const TOMORROW = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
const RANGE = `starting_at=${TODAY}T00:00:00Z&ending_at=${TOMORROW}T00:00:00Z`;

interface Usage {
  input_tokens: number;
  output_tokens: number;
}
let stack: Stack;
let admin: string;
/** Per model: the tokens and the cents worked out by hand from each call's usage. */
const byModel = new Map<
  string,
  { tokens: number; input: number; output: number; cents: number; calls: number }
>();

const analytics = (path: string) =>
  api(stack.gateway.url, `/v1/organizations/analytics/${path}`, {
    key: admin,
    headers: { 'anthropic-beta': BETA },
  });

beforeAll(async () => {
  stack = await startStack();
  admin = (await stack.newKey({ kind: 'admin' })).secret;
  // Different prompt lengths, so the models rank differently by tokens and by cost.
  const plan: [string, number][] = [
    ['claude-haiku-5-5', 3],
    ['claude-sonnet-5-5', 2],
    ['claude-opus-5-5', 1],
  ];
  for (const [model, n] of plan)
    for (let i = 0; i < n; i++) {
      const res = await api(stack.gateway.url, '/v1/messages', {
        bearer: stack.appKey,
        body: {
          model,
          max_tokens: 64,
          messages: [{ role: 'user', content: 'Tell me more, please. '.repeat(40 * n) }],
        },
      });
      expect(res.status).toBe(200);
      const u = res.body.usage as Usage;
      const m = byModel.get(model) ?? { tokens: 0, input: 0, output: 0, cents: 0, calls: 0 };
      m.tokens += u.input_tokens + u.output_tokens;
      m.input += u.input_tokens;
      m.output += u.output_tokens;
      m.cents += (u.input_tokens * RATES[model]!.in + u.output_tokens * RATES[model]!.out) / 10_000;
      m.calls += 1;
      byModel.set(model, m);
    }
  await stack.calls();
});
afterAll(() => stack?.close());

describe("the analytics endpoints page like the provider's", () => {
  it('usage: rows of { starting_at, ending_at, group, usage }, ranked by total_tokens, a page of `limit` at a time', async () => {
    const first = await analytics(`usage?${RANGE}&group_by[]=model&limit=2`);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data).toHaveLength(2);
    expect(first.body.has_more).toBe(true);
    expect(first.body.next_page).toMatch(/^page_/);
    expect(typeof first.body.data_refreshed_at).toBe('string');
    const row = first.body.data[0];
    expect(Object.keys(row).sort()).toEqual(['ending_at', 'group', 'starting_at', 'usage']);
    // Every dimension of the provider's group, null unless grouped by.
    expect(row.group.api_key_id).toBeNull();
    expect(row.group.workspace_id).toBeNull();
    expect(row.group.product).toBeNull();
    // Without a time bucket the row spans the range, rounded to the hour.
    expect(row.starting_at).toBe(`${TODAY}T00:00:00.000Z`);
    expect(row.ending_at).toBe(`${TOMORROW}T00:00:00.000Z`);
    const second = await analytics(
      `usage?${RANGE}&group_by[]=model&limit=2&page=${encodeURIComponent(first.body.next_page)}`,
    );
    expect(second.status).toBe(200);
    expect(second.body.has_more).toBe(false);
    expect(second.body.next_page).toBeNull();
    const rows = [...first.body.data, ...second.body.data];
    const ranked = [...byModel].sort((a, b) => b[1].tokens - a[1].tokens).map(([m]) => m);
    expect(rows.map((r) => r.group.model)).toEqual(ranked);
    for (const r of rows) {
      const m = byModel.get(r.group.model)!;
      expect(r.usage).toMatchObject({
        uncached_input_tokens: m.input,
        output_tokens: m.output,
        total_tokens: m.tokens,
        requests: m.calls,
      });
    }
    // Ascending by requests.
    const asc = await analytics(`usage?${RANGE}&group_by[]=model&order_by=requests&order=asc`);
    expect(asc.body.data.map((r: { usage: { requests: number } }) => r.usage.requests)).toEqual([1, 2, 3]);
  });

  it('cost: amounts in cents equal the hand figures; the fan-out by token type does not count toward the limit', async () => {
    const first = await analytics(`cost?${RANGE}&group_by[]=model&limit=1&order=asc`);
    expect(first.status).toBe(200);
    expect(first.body.has_more).toBe(true);
    const seen = [...first.body.data];
    let next = first.body.next_page;
    while (next) {
      const page = await analytics(`cost?${RANGE}&group_by[]=model&limit=1&order=asc&page=${next}`);
      expect(page.body.data.length).toBeLessThanOrEqual(1);
      seen.push(...page.body.data);
      next = page.body.next_page;
    }
    const cheapestFirst = [...byModel].sort((a, b) => a[1].cents - b[1].cents).map(([m]) => m);
    expect(seen.map((r) => r.group.model)).toEqual(cheapestFirst);
    for (const r of seen) {
      const m = byModel.get(r.group.model)!;
      expect(r.cost.currency).toBe('USD');
      expect(Number(r.cost.amount), r.group.model).toBeCloseTo(m.cents, 6);
      expect(r.cost.list_amount).toBe(r.cost.amount);
      expect(r.cost.requests).toBe(m.calls);
    }

    // One model row a page, fanned out by token type: input and output, requests null.
    const fan = await analytics(`cost?${RANGE}&group_by[]=model&group_by[]=token_type&limit=1`);
    expect(fan.status).toBe(200);
    expect(fan.body.has_more).toBe(true);
    expect(fan.body.data).toHaveLength(2);
    const top = [...byModel].sort((a, b) => b[1].cents - a[1].cents)[0]!;
    const parts = Object.fromEntries(
      fan.body.data.map((r: { group: { token_type: string }; cost: { amount: string } }) => [
        r.group.token_type,
        Number(r.cost.amount),
      ]),
    );
    expect(fan.body.data.every((r: { group: { model: string } }) => r.group.model === top[0])).toBe(true);
    expect(parts.uncached_input_tokens).toBeCloseTo((top[1].input * RATES[top[0]]!.in) / 10_000, 6);
    expect(parts.output_tokens).toBeCloseTo((top[1].output * RATES[top[0]]!.out) / 10_000, 6);
    expect(fan.body.data.every((r: { cost: { requests: null } }) => r.cost.requests === null)).toBe(true);
  });

  it('the official SDK walks every page of both endpoints with its own paginator', async () => {
    const client = new Anthropic({ baseURL: stack.gateway.url, apiKey: admin });
    const usage = [];
    for await (const row of client.beta.organization.analytics.usage.list({
      starting_at: `${TODAY}T00:00:00Z`,
      ending_at: `${TOMORROW}T00:00:00Z`,
      group_by: ['model'],
      limit: 1,
    }))
      usage.push(row);
    expect(usage.map((r) => r.group.model).sort()).toEqual([...byModel.keys()].sort());
    let cents = 0;
    for await (const row of client.beta.organization.analytics.cost.list({
      starting_at: `${TODAY}T00:00:00Z`,
      ending_at: `${TOMORROW}T00:00:00Z`,
      group_by: ['model'],
      limit: 1,
    }))
      cents += Number(row.cost.amount);
    expect(cents).toBeCloseTo(
      [...byModel.values()].reduce((s, m) => s + m.cents, 0),
      6,
    );
  });

  it('refuses what it cannot answer, in the provider error shape', async () => {
    for (const [query, message] of [
      [`usage?${RANGE}&page=page_bm9wZQ`, /page: not a next_page token/],
      [`usage?${RANGE}&time_bucket_width=1m`, /'1h' and '1d'/],
      [`usage?starting_at=${TODAY}T00:00:00Z&time_bucket_width=1h`, /ending_at: required/],
      [`usage?${RANGE}&limit=1001`, /limit/],
      [`cost?${RANGE}&order_by=total_tokens`, /order_by/],
      // A filter Keygate does not apply is refused, never silently ignored.
      [`usage?${RANGE}&models[]=claude-opus-5-5`, /models/],
    ] as const) {
      const res = await analytics(query);
      expect(res.status, query).toBe(400);
      expect(res.body.type).toBe('error');
      expect(res.body.error.type).toBe('invalid_request_error');
      expect(res.body.error.message, query).toMatch(message);
    }
  });

  it('with a time bucket, rows per hour bucket in time order when asked', async () => {
    const res = await analytics(`usage?${RANGE}&time_bucket_width=1h&order_by=time&order=asc&limit=1000`);
    expect(res.status).toBe(200);
    const total = res.body.data.reduce(
      (s: number, r: { usage: { total_tokens: number } }) => s + r.usage.total_tokens,
      0,
    );
    expect(total).toBe([...byModel.values()].reduce((s, m) => s + m.tokens, 0));
    for (const r of res.body.data)
      expect(Date.parse(r.ending_at) - Date.parse(r.starting_at)).toBe(3_600_000);
    const starts = res.body.data.map((r: { starting_at: string }) => r.starting_at);
    expect(starts).toEqual([...starts].sort());
  });
});
