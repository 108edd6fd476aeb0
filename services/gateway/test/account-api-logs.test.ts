import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callModel, seedReports, startStack, type ReportFixture, type Stack } from './harness';

let stack: Stack;
let f: ReportFixture;
const get = (path: string, key = f.acct.adminKey) => api(stack.gateway.url, path, { key });

beforeAll(async () => {
  stack = await startStack();
  f = await seedReports(stack);
});
afterAll(() => stack?.close());

describe('GET /v1/organizations/requests (the call log)', () => {
  const ids = async (q: string) =>
    (await get(`/v1/organizations/requests?${q}`)).body.data.map((r: any) => r.created_at);

  it('lists calls newest first with their usage, and filters by key, member, group, status and time', async () => {
    const { body } = await get('/v1/organizations/requests');
    expect(body.data.map((r: any) => r.created_at)).toEqual([
      '2025-03-11T00:30:00.000Z',
      '2025-03-10T14:05:00.000Z',
      '2025-03-10T09:45:00.000Z',
      '2025-03-10T09:15:00.000Z',
    ]);
    expect(body.data[3]).toMatchObject({
      type: 'request',
      api_key_id: f.keyA,
      user_id: f.member,
      app: 'web',
      group_id: 'g1',
      endpoint: 'messages',
      model: 'claude-opus-4-5',
      status: 200,
      error_type: null,
      usage: expect.objectContaining({ input_tokens: 100 }),
    });
    expect(await ids(`api_key_id=${f.keyB}`)).toEqual(['2025-03-10T14:05:00.000Z']);
    expect(await ids(`user_id=${f.member}`)).toHaveLength(3);
    expect(await ids('group_id=g1')).toEqual(['2025-03-10T09:15:00.000Z']);
    expect(await ids('status=error')).toEqual(['2025-03-11T00:30:00.000Z']);
    expect(await ids('status=529')).toEqual(['2025-03-11T00:30:00.000Z']);
    expect(await ids('status=ok')).toHaveLength(3);
    expect(await ids('model=claude-sonnet-4-5')).toEqual(['2025-03-10T09:45:00.000Z']);
    expect(await ids('starting_at=2025-03-10T10:00:00Z&ending_at=2025-03-11T00:00:00Z')).toEqual([
      '2025-03-10T14:05:00.000Z',
    ]);
  });

  it('shows a call made through the gateway moments ago', async () => {
    const key = (
      await api(stack.gateway.url, '/v1/organizations/api_keys', {
        key: f.acct.adminKey,
        body: { kind: 'test' },
      })
    ).body;
    // The fixture's account has no trial left: it pays, or its calls get 402.
    await api(stack.gateway.url, `/operator/v1/accounts/${f.acct.id}/mark_paid`, {
      bearer: 'operator-token-0123456789',
      body: { until: '2099-01-01' },
    });
    const call = await callModel(stack.gateway.url, key.key, { 'keygate-group-id': 'live-check' });
    await stack.gateway.writer.flush();
    const { body } = await get('/v1/organizations/requests?group_id=live-check');
    expect(body.data).toEqual([
      expect.objectContaining({
        id: call.headers.get('keygate-request-id'),
        api_key_id: key.id,
        status: 200,
      }),
    ]);
  });

  it('pages with limit, after_id and before_id', async () => {
    const all = (await get(`/v1/organizations/requests?api_key_id=${f.keyA}`)).body.data.map(
      (r: any) => r.id,
    );
    const p1 = (await get(`/v1/organizations/requests?api_key_id=${f.keyA}&limit=2`)).body;
    expect(p1).toMatchObject({ has_more: true, first_id: all[0], last_id: all[1] });
    const p2 = (await get(`/v1/organizations/requests?api_key_id=${f.keyA}&limit=2&after_id=${p1.last_id}`))
      .body;
    expect(p2.data.map((r: any) => r.id)).toEqual([all[2]]);
    expect(p2.has_more).toBe(false);
    const back = (await get(`/v1/organizations/requests?api_key_id=${f.keyA}&limit=5&before_id=${all[2]}`))
      .body;
    expect(back.data.map((r: any) => r.id)).toEqual(all.slice(0, 2));
  });

  it("bad filters answer 400; another account's calls are not there", async () => {
    expect((await get('/v1/organizations/requests?status=maybe')).status).toBe(400);
    expect((await get('/v1/organizations/requests?starting_at=noon')).status).toBe(400);
    const theirs = (await get('/v1/organizations/requests', f.other.adminKey)).body.data;
    expect(theirs).toHaveLength(1);
    expect((await get(`/v1/organizations/requests?api_key_id=${f.other.adminKeyId}`)).body.data).toEqual([]);
  });
});

describe('GET /v1/organizations/audit_log', () => {
  it('records who created, changed, rotated and deleted keys, and who added and removed members', async () => {
    const acct = await stack.seedAccount();
    const post = (path: string, body: object, method?: string) =>
      api(stack.gateway.url, path, { key: acct.adminKey, body, ...(method ? { method } : {}) });
    const member = (await post('/v1/organizations/users', { email: 'audited@acct.test' })).body;
    const key = (await post('/v1/organizations/api_keys', { member_id: member.id })).body;
    await post(`/v1/organizations/api_keys/${key.id}`, { name: 'renamed', status: 'inactive' });
    await post(`/v1/organizations/api_keys/${key.id}/rotate`, { grace_period_seconds: 60 });
    await api(stack.gateway.url, `/v1/organizations/api_keys/${key.id}`, {
      key: acct.adminKey,
      method: 'DELETE',
    });
    await api(stack.gateway.url, `/v1/organizations/users/${member.id}`, {
      key: acct.adminKey,
      method: 'DELETE',
    });
    await api(stack.gateway.url, `/operator/v1/accounts/${acct.id}/suspend`, {
      bearer: 'operator-token-0123456789',
      method: 'POST',
    });
    await api(stack.gateway.url, `/operator/v1/accounts/${acct.id}/reactivate`, {
      bearer: 'operator-token-0123456789',
      method: 'POST',
    });

    const { body } = await api(stack.gateway.url, '/v1/organizations/audit_log?limit=100', {
      key: acct.adminKey,
    });
    const trail = body.data.map((e: any) => [e.action, e.actor, e.target_id]).reverse();
    expect(trail.slice(-9)).toEqual([
      ['user.add', acct.adminKeyId, member.id],
      ['api_key.create', acct.adminKeyId, key.id],
      ['api_key.status_change', acct.adminKeyId, key.id],
      ['api_key.update', acct.adminKeyId, key.id],
      ['api_key.rotate', acct.adminKeyId, key.id],
      ['api_key.delete', acct.adminKeyId, key.id],
      ['user.remove', acct.adminKeyId, member.id],
      ['account.suspend', 'operator', acct.id],
      ['account.reactivate', 'operator', acct.id],
    ]);
    const change = body.data.find((e: any) => e.action === 'api_key.status_change');
    expect(change).toMatchObject({
      type: 'audit_event',
      actor_type: 'api_key',
      details: { from: 'active', to: 'inactive' },
    });
    expect(Date.parse(change.created_at)).toBeGreaterThan(Date.now() - 60_000);

    const forKey = (
      await api(stack.gateway.url, `/v1/organizations/audit_log?target_id=${key.id}&action=api_key.rotate`, {
        key: acct.adminKey,
      })
    ).body;
    expect(forKey.data).toEqual([expect.objectContaining({ details: { grace_period_seconds: 60 } })]);
    const paged = (
      await api(stack.gateway.url, '/v1/organizations/audit_log?limit=3', { key: acct.adminKey })
    ).body;
    expect(paged.has_more).toBe(true);
    const next = (
      await api(stack.gateway.url, `/v1/organizations/audit_log?limit=3&after_id=${paged.last_id}`, {
        key: acct.adminKey,
      })
    ).body;
    expect(next.data[0].id).toBe(body.data[3].id);
  });

  it("is the account's own: other accounts and app keys cannot read it", async () => {
    const theirs = (await get('/v1/organizations/audit_log?limit=100', f.other.adminKey)).body.data;
    expect(theirs.every((e: any) => e.target_id !== f.keyA)).toBe(true);
    expect(
      (await api(stack.gateway.url, '/v1/organizations/audit_log', { bearer: stack.appKey })).status,
    ).toBe(401);
  });
});
