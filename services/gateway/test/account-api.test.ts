import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callModel, startStack, type SeededAccount, type Stack } from './harness';

let stack: Stack;
let acme: SeededAccount;
let other: SeededAccount;
const url = () => stack.gateway.url;

beforeAll(async () => {
  stack = await startStack();
  acme = await stack.seedAccount({ name: 'Acme' });
  other = await stack.seedAccount({ name: 'Other' });
});
afterAll(() => stack?.close());

function expectError(
  res: { status: number; body: any; headers: Headers },
  status: number,
  type: string,
  message?: RegExp,
) {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ type: 'error', error: { type } });
  expect(res.body.request_id).toBe(res.headers.get('request-id'));
  if (message) expect(res.body.error.message).toMatch(message);
}

describe('authentication (security)', () => {
  it('takes the admin key as x-api-key or as Bearer', async () => {
    expect((await api(url(), '/v1/organizations/me', { key: acme.adminKey })).status).toBe(200);
    expect((await api(url(), '/v1/organizations/me', { bearer: acme.adminKey })).status).toBe(200);
  });

  it('no key, a malformed key, an unknown admin key: 401', async () => {
    expectError(await api(url(), '/v1/organizations/me'), 401, 'authentication_error', /Missing/);
    expectError(
      await api(url(), '/v1/organizations/me', { key: 'kg_admin_nope' }),
      401,
      'authentication_error',
      /not a Keygate key/,
    );
    expectError(
      await api(url(), '/v1/organizations/me', { key: 'sk-ant-admin01-abcdefgh' }),
      401,
      'authentication_error',
      /Anthropic API key/,
    );
  });

  it('an app key cannot use the account API, and an admin key cannot call models', async () => {
    expectError(
      await api(url(), '/v1/organizations/users', { bearer: stack.appKey }),
      401,
      'authentication_error',
      /send an admin key \(kg_admin_/,
    );
    expectError(
      await callModel(url(), acme.adminKey),
      401,
      'authentication_error',
      /Admin keys .* cannot call models/,
    );
  });
});

// Every route of the route table against every kind of wrong key: route-security.test.ts.

describe('GET /v1/organizations/me', () => {
  it('answers the account, its plan, trial and seats', async () => {
    const { status, body } = await api(url(), '/v1/organizations/me', { key: acme.adminKey });
    expect(status).toBe(200);
    expect(body).toMatchObject({
      id: acme.id,
      type: 'organization',
      name: 'Acme',
      status: 'active',
      in_trial: true,
      plan: { id: 'team', price_cents: 1900, currency: 'EUR', per_seat: true },
      seats: { used: 1, max: null },
    });
    expect(body.provider_key_hint).toMatch(/^sk-ant-…/);
    expect(JSON.stringify(body)).not.toMatch(/sk-ant-api03/);
  });
});

describe('members (users)', () => {
  it('adds, reads, updates and removes a member; the removed one keeps its history', async () => {
    const added = await api(url(), '/v1/organizations/users', {
      key: acme.adminKey,
      body: { email: 'dev@acme.test', name: 'Dev', role: 'developer' },
    });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({
      type: 'user',
      email: 'dev@acme.test',
      name: 'Dev',
      role: 'developer',
      status: 'active',
    });
    const id = added.body.id;
    expect((await api(url(), `/v1/organizations/users/${id}`, { key: acme.adminKey })).body.email).toBe(
      'dev@acme.test',
    );
    const promoted = await api(url(), `/v1/organizations/users/${id}`, {
      key: acme.adminKey,
      body: { role: 'admin' },
    });
    expect(promoted.body.role).toBe('admin');

    const removed = await api(url(), `/v1/organizations/users/${id}`, {
      key: acme.adminKey,
      method: 'DELETE',
    });
    expect(removed.body).toEqual({ id, type: 'user_deleted' });
    expect((await api(url(), `/v1/organizations/users/${id}`, { key: acme.adminKey })).body).toMatchObject({
      status: 'removed',
    });
    const active = await api(url(), '/v1/organizations/users', { key: acme.adminKey });
    expect(active.body.data.map((m: any) => m.id)).not.toContain(id);
    const all = await api(url(), '/v1/organizations/users?status=all', { key: acme.adminKey });
    expect(all.body.data.map((m: any) => m.id)).toContain(id);
    expectError(
      await api(url(), `/v1/organizations/users/${id}`, { key: acme.adminKey, method: 'DELETE' }),
      404,
      'not_found_error',
    );
  });

  it('finds a member by email', async () => {
    await api(url(), '/v1/organizations/users', { key: acme.adminKey, body: { email: 'Find.Me@acme.test' } });
    const { body } = await api(url(), '/v1/organizations/users?email=find.me@acme.test', {
      key: acme.adminKey,
    });
    expect(body.data).toHaveLength(1);
    expect(body.data[0].role).toBe('developer');
  });

  it.each([
    ['no email', {}, /email: Field required/],
    ['a bad email', { email: 'not-an-email' }, /email/],
    ['an unknown role', { email: 'x@acme.test', role: 'owner' }, /role/],
    ['an unknown field', { email: 'x@acme.test', team: 'a' }, /team/],
  ])('bad input: %s → 400', async (_n, body, message) => {
    expectError(
      await api(url(), '/v1/organizations/users', { key: acme.adminKey, body }),
      400,
      'invalid_request_error',
      message,
    );
  });

  it('bad input: a duplicate email, an empty update, invalid JSON → 400', async () => {
    await api(url(), '/v1/organizations/users', { key: acme.adminKey, body: { email: 'twice@acme.test' } });
    expectError(
      await api(url(), '/v1/organizations/users', { key: acme.adminKey, body: { email: 'TWICE@acme.test' } }),
      400,
      'invalid_request_error',
      /already a member/,
    );
    expectError(
      await api(url(), `/v1/organizations/users/${acme.adminMemberId}`, { key: acme.adminKey, body: {} }),
      400,
      'invalid_request_error',
      /at least one/,
    );
    expectError(
      await api(url(), '/v1/organizations/users', { key: acme.adminKey, body: '{"email":' }),
      400,
      'invalid_request_error',
      /not valid JSON/,
    );
  });

  it("refuses to remove or demote the account's last admin", async () => {
    const solo = await stack.seedAccount({ plan: 'team' });
    const path = `/v1/organizations/users/${solo.adminMemberId}`;
    expectError(
      await api(url(), path, { key: solo.adminKey, method: 'DELETE' }),
      400,
      'invalid_request_error',
      /last admin/,
    );
    expectError(
      await api(url(), path, { key: solo.adminKey, body: { role: 'developer' } }),
      400,
      'invalid_request_error',
      /last admin/,
    );
  });

  it('the solo plan has one seat', async () => {
    const solo = await stack.seedAccount({ plan: 'solo' });
    const res = await api(url(), '/v1/organizations/users', {
      key: solo.adminKey,
      body: { email: 'second@solo.test' },
    });
    expectError(res, 400, 'invalid_request_error', /Solo plan has 1 seat/);
  });

  it('concurrent adds never take more seats than the plan has', async () => {
    const op = { bearer: 'operator-token-0123456789' };
    for (let round = 0; round < 3; round++) {
      const solo = (
        await api(url(), '/operator/v1/accounts', { ...op, body: { name: `Race ${round}`, plan: 'solo' } })
      ).body;
      const adds = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          api(url(), `/operator/v1/accounts/${solo.id}/users`, {
            ...op,
            body: { email: `racer${i}@solo.test` },
          }),
        ),
      );
      expect(adds.filter((r) => r.status === 201)).toHaveLength(1);
      for (const refused of adds.filter((r) => r.status !== 201))
        expectError(refused, 400, 'invalid_request_error', /Solo plan has 1 seat/);
      expect((await api(url(), `/operator/v1/accounts/${solo.id}`, op)).body.seats).toEqual({
        used: 1,
        max: 1,
      });
    }
  });

  it("another account's member is 404, exactly as a member that does not exist", async () => {
    const theirs = `/v1/organizations/users/${other.adminMemberId}`;
    const missing = await api(url(), '/v1/organizations/users/user_doesnotexist', { key: acme.adminKey });
    const read = await api(url(), theirs, { key: acme.adminKey });
    expectError(read, 404, 'not_found_error');
    expect(read.body.error.message).toBe(
      missing.body.error.message.replace('user_doesnotexist', other.adminMemberId),
    );
    expectError(
      await api(url(), theirs, { key: acme.adminKey, body: { name: 'x' } }),
      404,
      'not_found_error',
    );
    expectError(await api(url(), theirs, { key: acme.adminKey, method: 'DELETE' }), 404, 'not_found_error');
    expect((await api(url(), theirs, { key: other.adminKey })).body.status).toBe('active');
  });

  it('pages with limit, after_id and before_id, newest first', async () => {
    const team = await stack.seedAccount();
    const ids = [team.adminMemberId];
    for (let i = 0; i < 5; i++) {
      ids.push(
        (
          await api(url(), '/v1/organizations/users', {
            key: team.adminKey,
            body: { email: `p${i}@team.test` },
          })
        ).body.id,
      );
    }
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page: any = (
        await api(url(), `/v1/organizations/users?limit=2${after ? `&after_id=${after}` : ''}`, {
          key: team.adminKey,
        })
      ).body;
      seen.push(...page.data.map((m: any) => m.id));
      expect(page.first_id).toBe(page.data[0].id);
      expect(page.last_id).toBe(page.data.at(-1).id);
      if (!page.has_more) break;
      after = page.last_id;
    }
    expect(seen).toEqual([...ids].reverse());
    const back = (
      await api(url(), `/v1/organizations/users?limit=2&before_id=${seen[4]}`, { key: team.adminKey })
    ).body;
    expect(back.data.map((m: any) => m.id)).toEqual(seen.slice(2, 4));
    expect(back.has_more).toBe(true);
  });

  it.each([
    ['users', async () => other.adminMemberId],
    ['api_keys', async () => other.adminKeyId],
    [
      'audit_log',
      async () =>
        (await api(url(), '/v1/organizations/audit_log', { key: other.adminKey })).body.data[0].id as string,
    ],
  ])(
    "%s: another account's id as a cursor is 400, exactly as an id that does not exist (security)",
    async (list, theirs) => {
      const id = await theirs();
      for (const param of ['after_id', 'before_id']) {
        const missing = await api(url(), `/v1/organizations/${list}?${param}=nope_doesnotexist`, {
          key: acme.adminKey,
        });
        expectError(missing, 400, 'invalid_request_error', new RegExp(`^${param}: no such id in this list`));
        const probe = await api(url(), `/v1/organizations/${list}?${param}=${id}`, { key: acme.adminKey });
        expectError(probe, 400, 'invalid_request_error');
        expect(probe.body.error.message).toBe(missing.body.error.message);
      }
    },
  );

  it('bad paging parameters → 400', async () => {
    for (const q of ['limit=0', 'limit=1001', 'limit=ten', 'after_id=a&before_id=b', 'status=gone']) {
      expectError(
        await api(url(), `/v1/organizations/users?${q}`, { key: acme.adminKey }),
        400,
        'invalid_request_error',
      );
    }
  });
});

describe('billing statement', () => {
  it('answers what the account owes for a month', async () => {
    const paid = await stack.seedAccount({ plan: 'scale', trialDays: 0 });
    const { body } = await api(url(), '/v1/organizations/billing?month=2030-01', { key: paid.adminKey });
    expect(body).toMatchObject({
      account_id: paid.id,
      month: '2030-01',
      plan: 'scale',
      currency: 'EUR',
      total_cents: 4900,
      billable_days: 31,
    });
    expectError(
      await api(url(), '/v1/organizations/billing?month=2030-13', { key: paid.adminKey }),
      400,
      'invalid_request_error',
      /month/,
    );
  });
});
