import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, seedReports, startStack, type ReportFixture, type Stack } from './harness';

let stack: Stack;
let f: ReportFixture;
const cost = '/v1/organizations/cost_report';
const get = (path: string, key = f.acct.adminKey) => api(stack.gateway.url, path, { key });
const usd = (results: any[]) => results.filter((r) => r.currency === 'USD');

beforeAll(async () => {
  stack = await startStack();
  f = await seedReports(stack);
});
afterAll(() => stack?.close());

// Opus 4.5 ($ per MTok): input 5, output 25, 5m write 6.25, 1h write 10, read 0.50; Sonnet 4.5: 3 / 15; search $0.01.
const OPUS_CENTS = {
  input: (100 * 5) / 1e4,
  output: (50 * 25) / 1e4,
  w5m: (20 * 6.25) / 1e4,
  w1h: (10 * 10) / 1e4,
  read: (30 * 0.5) / 1e4,
};
const SEARCH_CENTS = 1;
const SONNET_CENTS = (200 * 3) / 1e4 + (100 * 15) / 1e4;
const DAY1 = Object.values(OPUS_CENTS).reduce((a, b) => a + b, 0) + SEARCH_CENTS + SONNET_CENTS;

describe('cost report', () => {
  it('one USD amount per day, in cents as a decimal string; test keys are not billed', async () => {
    const { status, body } = await get(
      `${cost}?starting_at=2025-03-10T00:00:00Z&ending_at=2025-03-12T00:00:00Z`,
    );
    expect(status).toBe(200);
    expect(body).toMatchObject({ has_more: false, next_page: null });
    expect(body.data.map((b: any) => b.starting_at)).toEqual([
      '2025-03-10T00:00:00Z',
      '2025-03-11T00:00:00Z',
    ]);
    const [day1] = body.data[0].results;
    expect(body.data[0].results).toHaveLength(1);
    expect(day1).toMatchObject({
      currency: 'USD',
      description: null,
      cost_type: null,
      model: null,
      token_type: null,
      workspace_id: null,
    });
    expect(Number(day1.amount)).toBeCloseTo(DAY1, 6);
    expect(Number(body.data[1].results[0].amount)).toBeCloseTo((10 * 5 + 5 * 25) / 1e4, 6);
  });

  it('grouped by description: one item per model and token type, with the provider names', async () => {
    const { body } = await get(`${cost}?starting_at=2025-03-10&ending_at=2025-03-11&group_by[]=description`);
    const items = usd(body.data[0].results);
    const find = (model: string, token: string | null) =>
      items.find((i: any) => i.model === model && i.token_type === token);
    expect(find('claude-opus-4-5', 'uncached_input_tokens')).toMatchObject({
      cost_type: 'tokens',
      description: 'Claude Opus 4.5 Usage - Input Tokens',
    });
    expect(Number(find('claude-opus-4-5', 'uncached_input_tokens').amount)).toBeCloseTo(OPUS_CENTS.input, 9);
    expect(Number(find('claude-opus-4-5', 'cache_creation.ephemeral_1h_input_tokens').amount)).toBeCloseTo(
      OPUS_CENTS.w1h,
      9,
    );
    expect(Number(find('claude-opus-4-5', 'cache_read_input_tokens').amount)).toBeCloseTo(OPUS_CENTS.read, 9);
    expect(find('claude-opus-4-5', null)).toMatchObject({
      cost_type: 'web_search',
      description: 'Web Search',
      amount: '1',
    });
    expect(Number(find('claude-sonnet-4-5', 'output_tokens').amount)).toBeCloseTo(0.15, 9);
    expect(items.reduce((s: number, i: any) => s + Number(i.amount), 0)).toBeCloseTo(DAY1, 6);
  });

  it('grouped by key and member; a filter narrows it', async () => {
    const byKey = (
      await get(
        `${cost}?starting_at=2025-03-10&ending_at=2025-03-11&group_by[]=api_key_id&group_by[]=user_id`,
      )
    ).body;
    expect(usd(byKey.data[0].results)).toEqual([
      expect.objectContaining({ api_key_id: f.keyA, user_id: f.member }),
    ]);
    const filtered = (
      await get(`${cost}?starting_at=2025-03-10&ending_at=2025-03-11&models[]=claude-sonnet-4-5`)
    ).body;
    expect(Number(filtered.data[0].results[0].amount)).toBeCloseTo(SONNET_CENTS, 9);
  });

  it("answers only the provider's cost types and token types, in USD cents as decimal strings", async () => {
    const { body } = await get(
      `${cost}?starting_at=2025-03-01&ending_at=2025-03-12&limit=31&group_by[]=description`,
    );
    const items = body.data.flatMap((b: any) => b.results);
    expect(items.length).toBeGreaterThan(5);
    const tokenTypes = [
      'uncached_input_tokens',
      'output_tokens',
      'cache_read_input_tokens',
      'cache_creation.ephemeral_5m_input_tokens',
      'cache_creation.ephemeral_1h_input_tokens',
    ];
    for (const i of items) {
      expect(i.currency).toBe('USD');
      expect(i.amount).toMatch(/^\d+(\.\d+)?$/);
      expect(['tokens', 'web_search']).toContain(i.cost_type);
      if (i.cost_type === 'tokens') expect(tokenTypes).toContain(i.token_type);
      else expect(i.token_type).toBeNull();
    }
    // The plan's own charge is no provider cost type: the billing statement has it, not this report.
    const future = (await get(`${cost}?starting_at=2030-01-01&ending_at=2030-01-03&group_by[]=description`))
      .body;
    expect(future.data.flatMap((b: any) => b.results)).toEqual([]);
  });

  it('account_id is the member, as in the usage report', async () => {
    const { body } = await get(`${cost}?starting_at=2025-03-10&ending_at=2025-03-11&group_by[]=account_id`);
    expect(usd(body.data[0].results)).toEqual([
      expect.objectContaining({ account_id: f.member, user_id: f.member, api_key_id: null }),
    ]);
    const filtered = (
      await get(`${cost}?starting_at=2025-03-10&ending_at=2025-03-11&account_ids[]=${f.member}`)
    ).body;
    expect(Number(filtered.data[0].results[0].amount)).toBeCloseTo(DAY1, 6);
  });

  it('pages, and answers 400 to what it cannot do', async () => {
    const first = (await get(`${cost}?starting_at=2025-03-01&ending_at=2025-03-12&limit=5`)).body;
    expect(first.data).toHaveLength(5);
    expect(first.has_more).toBe(true);
    const rest = (
      await get(`${cost}?starting_at=2025-03-01&ending_at=2025-03-12&limit=31&page=${first.next_page}`)
    ).body;
    expect(rest.data[0].starting_at).toBe('2025-03-06T00:00:00Z');
    expect(rest.has_more).toBe(false);
    for (const [q, message] of [
      ['starting_at=2025-03-01&bucket_width=1h', /day buckets only/],
      ['starting_at=2025-03-01&limit=32', /at most 31/],
      ['starting_at=2025-03-01&group_by[]=colour', /group_by/],
      [
        'starting_at=2025-03-01&group_by[]=workspace_id',
        /group_by\[0\]: 'workspace_id' is not a dimension here: Keygate has no workspaces/,
      ],
      ['starting_at=2025-03-01&workspace_ids[]=w', /^workspace_ids: /],
      ['starting_at=2025-03-01&currency=EUR', /Unknown query parameter 'currency'/],
      ['', /starting_at/],
    ] as const) {
      const res = await get(`${cost}?${q}`);
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(message);
    }
  });

  it("one account never sees another's costs", async () => {
    const theirs = (await get(`${cost}?starting_at=2025-03-10&ending_at=2025-03-11`, f.other.adminKey)).body;
    expect(Number(theirs.data[0].results[0].amount)).toBeCloseTo((9999 * 5 + 25) / 1e4, 6);
  });
});
