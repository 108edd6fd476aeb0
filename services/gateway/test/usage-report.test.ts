import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callAt, seedReports, startStack, type ReportFixture, type Stack } from './harness';

let stack: Stack;
let f: ReportFixture;
const report = '/v1/organizations/usage_report/messages';
const get = (path: string, key = f.acct.adminKey) => api(stack.gateway.url, path, { key });

beforeAll(async () => {
  stack = await startStack();
  f = await seedReports(stack);
});
afterAll(() => stack?.close());

function expect400(res: { status: number; body: any }, message: RegExp) {
  expect(res.status).toBe(400);
  expect(res.body.error).toMatchObject({
    type: 'invalid_request_error',
    message: expect.stringMatching(message),
  });
}

describe('usage report, in the provider shape', () => {
  it('day buckets grouped by key and model; ungrouped dimensions are null; empty days are listed', async () => {
    const { status, body } = await get(
      `${report}?starting_at=2025-03-09T00:00:00Z&ending_at=2025-03-12T00:00:00Z&group_by[]=api_key_id&group_by[]=model`,
    );
    expect(status).toBe(200);
    expect(body).toMatchObject({ has_more: false, next_page: null });
    expect(body.data.map((b: any) => [b.starting_at, b.ending_at, b.results.length])).toEqual([
      ['2025-03-09T00:00:00Z', '2025-03-10T00:00:00Z', 0],
      ['2025-03-10T00:00:00Z', '2025-03-11T00:00:00Z', 3],
      ['2025-03-11T00:00:00Z', '2025-03-12T00:00:00Z', 1],
    ]);
    const opusA = body.data[1].results.find(
      (r: any) => r.api_key_id === f.keyA && r.model === 'claude-opus-4-5',
    );
    expect(opusA).toEqual({
      uncached_input_tokens: 100,
      cache_creation: { ephemeral_1h_input_tokens: 10, ephemeral_5m_input_tokens: 20 },
      cache_read_input_tokens: 30,
      output_tokens: 50,
      server_tool_use: { web_search_requests: 1 },
      requests: 1,
      errors: 0,
      account_id: null,
      api_key_id: f.keyA,
      workspace_id: null,
      model: 'claude-opus-4-5',
      service_tier: null,
      context_window: null,
      inference_geo: null,
      user_id: null,
      group_id: null,
      app: null,
      environment: null,
    });
    // A call answered with an error (here a 529) is a request, and one of its errors.
    expect(body.data[2].results[0]).toMatchObject({
      api_key_id: f.keyA,
      requests: 1,
      errors: 1,
      uncached_input_tokens: 10,
    });
  });

  it('hour buckets by member; with no group_by, one total per bucket', async () => {
    const byMember = (
      await get(
        `${report}?starting_at=2025-03-10T09:00:00Z&ending_at=2025-03-10T15:00:00Z&bucket_width=1h&group_by[]=user_id`,
      )
    ).body;
    expect(byMember.data).toHaveLength(6);
    expect(byMember.data[0].results).toEqual([
      expect.objectContaining({
        user_id: f.member,
        requests: 2,
        uncached_input_tokens: 300,
        api_key_id: null,
      }),
    ]);
    expect(byMember.data[5].results).toEqual([
      expect.objectContaining({ user_id: null, requests: 1, uncached_input_tokens: 1000 }),
    ]);
    const total = (await get(`${report}?starting_at=2025-03-10&ending_at=2025-03-11`)).body;
    expect(total.data[0].results).toEqual([
      expect.objectContaining({ requests: 3, uncached_input_tokens: 1300, output_tokens: 650, model: null }),
    ]);
  });

  it('minute buckets read the call log; a group dimension and app work too', async () => {
    const { body } = await get(
      `${report}?starting_at=2025-03-10T09:10:00Z&ending_at=2025-03-10T09:50:00Z&bucket_width=1m&group_by[]=group_id&group_by[]=app&limit=60`,
    );
    expect(body.data).toHaveLength(40);
    const busy = body.data.filter((b: any) => b.results.length);
    expect(busy.map((b: any) => b.starting_at)).toEqual(['2025-03-10T09:15:00Z', '2025-03-10T09:45:00Z']);
    expect(busy[0].results[0]).toMatchObject({ group_id: 'g1', app: 'web', requests: 1 });
    expect(busy[1].results[0]).toMatchObject({ group_id: null, app: 'web' });
  });

  it.each([
    ['api_key_ids[]', () => f.keyB, 1000],
    ['models[]', () => 'claude-sonnet-4-5', 200],
    ['group_ids[]', () => 'g1', 100],
    ['user_ids[]', () => f.member, 300],
    ['account_ids[]', () => f.member, 300],
  ])('filters by %s', async (param, value, input) => {
    const { body } = await get(`${report}?starting_at=2025-03-10&ending_at=2025-03-11&${param}=${value()}`);
    expect(body.data[0].results).toEqual([expect.objectContaining({ uncached_input_tokens: input })]);
  });

  it("group_by[]=account_id, the provider's user dimension, is the member", async () => {
    const { body } = await get(
      `${report}?starting_at=2025-03-10&ending_at=2025-03-11&group_by[]=account_id&group_by[]=model`,
    );
    const rows = body.data[0].results.map((r: any) => [
      r.account_id,
      r.user_id,
      r.model,
      r.uncached_input_tokens,
    ]);
    expect(rows).toEqual([
      [f.member, f.member, 'claude-opus-4-5', 100],
      [f.member, f.member, 'claude-sonnet-4-5', 200],
      [null, null, 'claude-opus-4-5', 1000],
    ]);
  });

  it("refuses, by name, the provider's dimensions and filters that do not exist here", async () => {
    for (const dim of [
      'workspace_id',
      'service_tier',
      'context_window',
      'inference_geo',
      'speed',
      'service_account_id',
    ]) {
      expect400(
        await get(`${report}?starting_at=2025-03-01&group_by[]=model&group_by[]=${dim}`),
        new RegExp(`group_by\\[1\\]: '${dim}' is not a dimension here`),
      );
    }
    expect400(await get(`${report}?starting_at=2025-03-01&group_by[]=workspace_id`), /no workspaces/);
    expect400(
      await get(`${report}?starting_at=2025-03-01&workspace_ids[]=wrkspc_1`),
      /^workspace_ids: Keygate has no workspaces/,
    );
    expect400(await get(`${report}?starting_at=2025-03-01&service_tiers[]=standard`), /^service_tiers: /);
    expect400(await get(`${report}?starting_at=2025-03-01&inference_geos=us`), /^inference_geos: /);
  });

  it('refuses an unknown query parameter, naming it and what the route takes', async () => {
    expect400(
      await get(`${report}?starting_at=2025-03-01&bucket=1d`),
      /Unknown query parameter 'bucket' for GET \/v1\/organizations\/usage_report\/messages: it takes starting_at, ending_at, bucket_width, group_by/,
    );
    expect400(
      await get(`${report}?starting_at=2025-03-01&foo=1&bar[]=2`),
      /Unknown query parameters 'foo', 'bar\[\]'/,
    );
  });

  it('pages through buckets with limit and next_page', async () => {
    const q = `${report}?starting_at=2025-03-01T00:00:00Z&ending_at=2025-03-12T00:00:00Z`;
    const all = (await get(`${q}&limit=31`)).body;
    expect(all.data).toHaveLength(11);
    const pages: any[] = [];
    let page: string | null = null;
    do {
      const body: any = (await get(`${q}&limit=4${page ? `&page=${page}` : ''}`)).body;
      expect(body.data.length).toBeLessThanOrEqual(4);
      expect(body.has_more).toBe(body.next_page !== null);
      pages.push(...body.data);
      page = body.next_page;
    } while (page);
    expect(pages).toEqual(all.data);
  });

  it('bad input answers 400 with what to send', async () => {
    expect400(await get(report), /starting_at: Field required/);
    expect400(await get(`${report}?starting_at=yesterday`), /starting_at: must be an RFC 3339 timestamp/);
    expect400(await get(`${report}?starting_at=2025-03-01&bucket_width=2d`), /bucket_width/);
    expect400(
      await get(`${report}?starting_at=2025-03-01&limit=32`),
      /at most 31 buckets for bucket_width=1d/,
    );
    expect400(await get(`${report}?starting_at=2025-03-01&bucket_width=1h&limit=169`), /at most 168/);
    expect400(await get(`${report}?starting_at=2025-03-01&bucket_width=1m&limit=1441`), /at most 1440/);
    expect400(
      await get(`${report}?starting_at=2025-03-10&ending_at=2025-03-01`),
      /ending_at: must be after starting_at/,
    );
    expect400(await get(`${report}?starting_at=2025-03-01&page=bogus`), /page: not a next_page token/);
    expect400(await get(`${report}?starting_at=2025-03-01&group_by[]=colour`), /group_by/);
  });

  it("one account never sees another's usage", async () => {
    const mine = (await get(`${report}?starting_at=2025-03-10&ending_at=2025-03-11`)).body;
    expect(mine.data[0].results[0].uncached_input_tokens).toBe(1300);
    const theirs = (await get(`${report}?starting_at=2025-03-10&ending_at=2025-03-11`, f.other.adminKey))
      .body;
    expect(theirs.data[0].results).toEqual([
      expect.objectContaining({ uncached_input_tokens: 9999, requests: 1 }),
    ]);
    const filtered = (
      await get(`${report}?starting_at=2025-03-10&ending_at=2025-03-11&api_key_ids[]=${f.other.adminKeyId}`)
    ).body;
    expect(filtered.data[0].results).toEqual([]);
  });

  it('day and hour buckets read the rollups, never the call log', async () => {
    const acct = await stack.seedAccount();
    await stack.gateway.store.calls.insertBatch([
      callAt(acct.id, '2025-05-05T05:05:00Z', { usage: { input_tokens: 7, output_tokens: 3 } }),
    ]);
    await stack.gateway.store.db.sql`delete from calls where account_id = ${acct.id}`;
    const day = (await get(`${report}?starting_at=2025-05-05&ending_at=2025-05-06`, acct.adminKey)).body;
    expect(day.data[0].results).toEqual([
      expect.objectContaining({ uncached_input_tokens: 7, output_tokens: 3, requests: 1 }),
    ]);
    const minute = (
      await get(
        `${report}?starting_at=2025-05-05T05:00:00Z&ending_at=2025-05-05T05:10:00Z&bucket_width=1m`,
        acct.adminKey,
      )
    ).body;
    expect(minute.data.flatMap((b: any) => b.results)).toEqual([]);
  });
});

describe('usage summary (what `keygate usage` prints)', () => {
  const summary = (q: string) =>
    get(`/v1/organizations/usage_summary?starting_at=2025-03-01&ending_at=2025-04-01&${q}`).then(
      (r) => r.body,
    );

  it('by key and member carries names; by day, model and group too', async () => {
    const byKey = await summary('by=key');
    expect(byKey.data.map((r: any) => [r.api_key_name, r.requests])).toEqual([
      ['A', 3],
      ['B', 1],
    ]);
    expect((await summary('by=member')).data[0]).toMatchObject({
      user_id: f.member,
      user_email: 'm1@reports.test',
      requests: 3,
      errors: 1,
    });
    expect((await summary('by=day')).data.map((r: any) => [r.day, r.requests])).toEqual([
      ['2025-03-10', 3],
      ['2025-03-11', 1],
    ]);
    expect((await summary('by=model')).data.map((r: any) => r.model).sort()).toEqual([
      'claude-opus-4-5',
      'claude-sonnet-4-5',
    ]);
    expect((await summary('by=group')).data).toContainEqual(
      expect.objectContaining({ group_id: 'g1', requests: 1 }),
    );
  });

  it('refuses an unknown dimension', async () => {
    expect400(await get('/v1/organizations/usage_summary?by=colour'), /by/);
  });
});
