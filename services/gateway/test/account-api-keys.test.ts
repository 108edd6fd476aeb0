import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callModel, startStack, type SeededAccount, type Stack } from './harness';

let stack: Stack;
let acme: SeededAccount;
let other: SeededAccount;
const url = () => stack.gateway.url;
const keys = '/v1/organizations/api_keys';

beforeAll(async () => {
  stack = await startStack();
  acme = await stack.seedAccount({ name: 'Acme' });
  other = await stack.seedAccount({ name: 'Other' });
});
afterAll(() => stack?.close());

function expectError(res: { status: number; body: any }, status: number, type: string, message?: RegExp) {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ type: 'error', error: { type } });
  if (message) expect(res.body.error.message).toMatch(message);
}

const create = (body: object, key = acme.adminKey) => api(url(), keys, { key, body });

describe('creating keys', () => {
  it('a live key with scope, expiry and limits: the secret is shown once and works at once', async () => {
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const res = await create({
      name: 'web prod',
      app: 'web',
      environment: 'prod',
      expires_at: expires,
      limits: { requests_per_minute: 100, tokens_per_minute: 50_000, monthly_spend_cap_cents: 2_500 },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      type: 'api_key',
      name: 'web prod',
      kind: 'live',
      status: 'active',
      app: 'web',
      environment: 'prod',
      expires_at: expires,
      created_by: acme.adminKeyId,
      last_used_at: null,
      limits: { requests_per_minute: 100, tokens_per_minute: 50_000, monthly_spend_cap_cents: 2_500 },
    });
    expect(res.body.key).toMatch(/^kg_live_/);
    expect(res.body.partial_key_hint).toBe(`kg_live_…${res.body.key.slice(-4)}`);
    expect((await callModel(url(), res.body.key)).status).toBe(200);
    const read = await api(url(), `${keys}/${res.body.id}`, { key: acme.adminKey });
    expect(read.body.key).toBeUndefined();
    expect(read.body.last_used_at).not.toBeNull();
  });

  it('a member key, a test key, and an admin key that manages the account', async () => {
    const dev = (
      await api(url(), '/v1/organizations/users', {
        key: acme.adminKey,
        body: { email: 'keys-dev@acme.test' },
      })
    ).body;
    const own = await create({ member_id: dev.id });
    expect(own.body).toMatchObject({ member_id: dev.id, name: 'live key of keys-dev@acme.test' });
    const test = await create({ kind: 'test', app: 'ci' });
    expect(test.body.key).toMatch(/^kg_test_/);
    expect((await callModel(url(), test.body.key)).status).toBe(200);
    const admin = await create({ kind: 'admin', name: 'automation' });
    expect(admin.body.key).toMatch(/^kg_admin_/);
    expect((await api(url(), '/v1/organizations/me', { key: admin.body.key })).body.id).toBe(acme.id);
  });

  it.each([
    ['an unknown kind', { kind: 'root' }, /kind/],
    ['an expiry in the past', { expires_at: '2001-01-01T00:00:00Z' }, /expires_at: must be in the future/],
    [
      'an expiry that is not a timestamp',
      { expires_at: 'tomorrow' },
      /expires_at: must be an RFC 3339 timestamp/,
    ],
    ['a zero rate limit', { limits: { requests_per_minute: 0 } }, /limits\.requests_per_minute/],
    ['a fractional spend cap', { limits: { monthly_spend_cap_cents: 1.5 } }, /monthly_spend_cap_cents/],
    ['an unknown limit', { limits: { per_day: 3 } }, /per_day/],
    [
      'limits on an admin key',
      { kind: 'admin', limits: { requests_per_minute: 5 } },
      /admin keys .* no limits/,
    ],
  ])('bad input: %s → 400', async (_n, body, message) => {
    expectError(await create(body), 400, 'invalid_request_error', message);
  });

  it('an admin key for a developer is refused; a member of another account is not found', async () => {
    const dev = (
      await api(url(), '/v1/organizations/users', {
        key: acme.adminKey,
        body: { email: 'not-admin@acme.test' },
      })
    ).body;
    expectError(
      await create({ kind: 'admin', member_id: dev.id }),
      400,
      'invalid_request_error',
      /developer/,
    );
    expectError(await create({ member_id: other.adminMemberId }), 404, 'not_found_error', /member_id/);
  });
});

describe('listing keys', () => {
  it('filters by status, kind, member, app and environment, and pages', async () => {
    const team = await stack.seedAccount();
    const mk = (body: object) => create(body, team.adminKey).then((r) => r.body.id as string);
    const a = await mk({ app: 'alpha', environment: 'prod' });
    const b = await mk({ app: 'alpha', environment: 'dev' });
    const c = await mk({ app: 'beta', environment: 'prod', kind: 'test' });
    await api(url(), `${keys}/${b}`, { key: team.adminKey, body: { status: 'inactive' } });
    const ids = async (q: string) =>
      (await api(url(), `${keys}?${q}`, { key: team.adminKey })).body.data.map((k: any) => k.id);
    expect(await ids('app=alpha')).toEqual([b, a]);
    expect(await ids('environment=prod')).toEqual([c, a]);
    expect(await ids('status=inactive')).toEqual([b]);
    expect(await ids('kind=test')).toEqual([c]);
    expect(await ids(`member_id=${team.adminMemberId}`)).toEqual([team.adminKeyId]);
    const first = (await api(url(), `${keys}?limit=2`, { key: team.adminKey })).body;
    expect(first).toMatchObject({ has_more: true, first_id: c, last_id: b });
    const second = (await api(url(), `${keys}?limit=2&after_id=${first.last_id}`, { key: team.adminKey }))
      .body;
    expect(second.data.map((k: any) => k.id)).toEqual([a, team.adminKeyId]);
    expect(second.has_more).toBe(false);
    expectError(
      await api(url(), `${keys}?status=revoked`, { key: team.adminKey }),
      400,
      'invalid_request_error',
      /status/,
    );
  });

  it("never shows another account's keys", async () => {
    const list = (await api(url(), `${keys}?limit=1000`, { key: other.adminKey })).body.data;
    expect(list.map((k: any) => k.id)).toEqual([other.adminKeyId]);
  });
});

describe('changing keys', () => {
  it('renames, deactivates and reactivates; the change applies to the next call', async () => {
    const k = (await create({ app: 'toggle' })).body;
    const renamed = await api(url(), `${keys}/${k.id}`, { key: acme.adminKey, body: { name: 'renamed' } });
    expect(renamed.body).toMatchObject({ id: k.id, name: 'renamed', status: 'active' });
    expect((await callModel(url(), k.key)).status).toBe(200);
    await api(url(), `${keys}/${k.id}`, { key: acme.adminKey, body: { status: 'inactive' } });
    expectError(await callModel(url(), k.key), 401, 'authentication_error', /deactivated/);
    await api(url(), `${keys}/${k.id}`, { key: acme.adminKey, body: { status: 'active' } });
    expect((await callModel(url(), k.key)).status).toBe(200);
  });

  it('an archived key is refused and cannot come back', async () => {
    const k = (await create({})).body;
    expect(
      (await api(url(), `${keys}/${k.id}`, { key: acme.adminKey, body: { status: 'archived' } })).body.status,
    ).toBe('archived');
    expectError(await callModel(url(), k.key), 401, 'authentication_error', /archived/);
    expectError(
      await api(url(), `${keys}/${k.id}`, { key: acme.adminKey, body: { status: 'active' } }),
      400,
      'invalid_request_error',
      /cannot be reactivated/,
    );
    expectError(
      await api(url(), `${keys}/${k.id}/rotate`, { key: acme.adminKey, method: 'POST' }),
      400,
      'invalid_request_error',
      /archived/,
    );
  });

  it('changes limits and expiry; null lifts a limit', async () => {
    const k = (await create({ limits: { requests_per_minute: 10 } })).body;
    const res = await api(url(), `${keys}/${k.id}`, {
      key: acme.adminKey,
      body: { limits: { requests_per_minute: null, tokens_per_minute: 1000 } },
    });
    expect(res.body.limits).toMatchObject({
      requests_per_minute: null,
      tokens_per_minute: 1000,
      monthly_spend_cap_cents: null,
    });
    expectError(
      await api(url(), `${keys}/${k.id}`, { key: acme.adminKey, body: { status: 'gone' } }),
      400,
      'invalid_request_error',
      /status/,
    );
    expectError(
      await api(url(), `${keys}/${k.id}`, { key: acme.adminKey, body: {} }),
      400,
      'invalid_request_error',
      /at least one/,
    );
  });

  it('rotates: same id, new secret works, the old one is refused (no grace)', async () => {
    const k = (await create({ app: 'rot' })).body;
    const rotated = await api(url(), `${keys}/${k.id}/rotate`, { key: acme.adminKey, method: 'POST' });
    expect(rotated.status).toBe(200);
    expect(rotated.body.id).toBe(k.id);
    expect(rotated.body.key).not.toBe(k.key);
    expect(rotated.body.partial_key_hint).toBe(`kg_live_…${rotated.body.key.slice(-4)}`);
    expect((await callModel(url(), rotated.body.key)).status).toBe(200);
    expectError(await callModel(url(), k.key), 401, 'authentication_error', /rotated/);
    expectError(
      await api(url(), `${keys}/${k.id}/rotate`, { key: acme.adminKey, body: { grace_period_seconds: -1 } }),
      400,
      'invalid_request_error',
      /grace_period_seconds/,
    );
  });

  it('deletes: the secret is refused and the key is gone from the API', async () => {
    const k = (await create({})).body;
    const res = await api(url(), `${keys}/${k.id}`, { key: acme.adminKey, method: 'DELETE' });
    expect(res.body).toEqual({ id: k.id, type: 'api_key_deleted' });
    expectError(await callModel(url(), k.key), 401, 'authentication_error', /does not exist or was deleted/);
    expectError(await api(url(), `${keys}/${k.id}`, { key: acme.adminKey }), 404, 'not_found_error');
    expectError(
      await api(url(), `${keys}/${k.id}`, { key: acme.adminKey, method: 'DELETE' }),
      404,
      'not_found_error',
    );
  });

  it("another account's key is 404 on every route, and stays untouched", async () => {
    const theirs = (await create({ app: 'theirs' }, other.adminKey)).body;
    const path = `${keys}/${theirs.id}`;
    expectError(
      await api(url(), path, { key: acme.adminKey }),
      404,
      'not_found_error',
      new RegExp(`No API key with id '${theirs.id}'`),
    );
    expectError(
      await api(url(), path, { key: acme.adminKey, body: { status: 'archived' } }),
      404,
      'not_found_error',
    );
    expectError(
      await api(url(), `${path}/rotate`, { key: acme.adminKey, method: 'POST' }),
      404,
      'not_found_error',
    );
    expectError(await api(url(), path, { key: acme.adminKey, method: 'DELETE' }), 404, 'not_found_error');
    expect((await callModel(url(), theirs.key)).status).toBe(200);
  });
});
