import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callModel, PROVIDER_KEY, seedReports, startStack, type Stack } from './harness';

let stack: Stack;
const TOKEN = 'operator-token-0123456789';
const op = (path: string, opts: { body?: unknown; method?: string } = {}) =>
  api(stack.gateway.url, `/operator/v1${path}`, { bearer: TOKEN, ...opts });

beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

function expectError(res: { status: number; body: any }, status: number, type: string, message?: RegExp) {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ type: 'error', error: { type } });
  if (message) expect(res.body.error.message).toMatch(message);
}

describe('operator authentication (security)', () => {
  it('needs the operator token; an admin or app key is not one', async () => {
    expectError(
      await api(stack.gateway.url, '/operator/v1/accounts'),
      401,
      'authentication_error',
      /KEYGATE_OPERATOR_TOKEN/,
    );
    expectError(
      await api(stack.gateway.url, '/operator/v1/accounts', { bearer: 'operator-token-0123456780' }),
      401,
      'authentication_error',
    );
    const acct = await stack.seedAccount();
    expectError(
      await api(stack.gateway.url, '/operator/v1/accounts', { bearer: acct.adminKey }),
      401,
      'authentication_error',
    );
    expectError(
      await api(stack.gateway.url, `/operator/v1/accounts/${acct.id}/users`, { bearer: stack.appKey }),
      401,
      'authentication_error',
    );
  });

  it.each([
    ['GET', '/plans'],
    ['GET', '/accounts'],
    ['POST', '/accounts'],
    ['GET', '/accounts/acct_x'],
    ['POST', '/accounts/acct_x'],
    ['POST', '/accounts/acct_x/suspend'],
    ['POST', '/accounts/acct_x/reactivate'],
    ['POST', '/accounts/acct_x/provider_key'],
    ['GET', '/usage'],
    ['GET', '/accounts/acct_x/api_keys'],
    ['GET', '/accounts/acct_x/usage_summary'],
  ] as const)('%s %s: 401 without the operator token', async (method, path) => {
    expectError(
      await api(stack.gateway.url, `/operator/v1${path}`, {
        method,
        ...(method === 'POST' ? { body: {} } : {}),
      }),
      401,
      'authentication_error',
    );
  });
});

describe('accounts', () => {
  it('creates an account with its first admin; the admin key works at once and the provider key is never returned', async () => {
    const res = await op('/accounts', {
      body: {
        name: 'Fresh Co',
        plan: 'scale',
        provider_key: PROVIDER_KEY,
        admin_email: 'lead@fresh.test',
        admin_name: 'Lead',
        trial_days: 30,
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      type: 'organization',
      name: 'Fresh Co',
      plan: 'scale',
      status: 'active',
      provider_key_hint: `sk-ant-…${PROVIDER_KEY.slice(-4)}`,
    });
    expect(Date.parse(res.body.trial_ends_at) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    expect(res.body.admin.member).toMatchObject({ email: 'lead@fresh.test', name: 'Lead', role: 'admin' });
    expect(res.body.admin.key).toMatchObject({
      kind: 'admin',
      member_id: res.body.admin.member.id,
      created_by: 'operator',
    });
    expect(JSON.stringify(res.body)).not.toContain(PROVIDER_KEY);
    const me = await api(stack.gateway.url, '/v1/organizations/me', { key: res.body.admin.key.key });
    expect(me.body).toMatchObject({ id: res.body.id, seats: { used: 1, max: null } });
    const [row] = await stack.gateway.store.db
      .sql`select provider_key_sealed from accounts where id = ${res.body.id}`;
    expect(row!.provider_key_sealed).toMatch(/^v2\./);
    expect(row!.provider_key_sealed).not.toContain(PROVIDER_KEY.slice(10));
  });

  it.each([
    ['no name', { plan: 'team' }, /name: Field required/],
    ['an unknown plan', { name: 'x', plan: 'gold' }, /plan/],
    [
      'a provider key of the wrong shape',
      { name: 'x', plan: 'team', provider_key: 'hunter2' },
      /provider_key: expected an Anthropic API key/,
    ],
    ['a bad admin email', { name: 'x', plan: 'team', admin_email: 'lead' }, /admin_email/],
    ['an unknown field', { name: 'x', plan: 'team', owner: 'me' }, /owner/],
  ])('bad input: %s → 400', async (_n, body, message) => {
    expectError(await op('/accounts', { body }), 400, 'invalid_request_error', message);
  });

  it('gets an account with its plan and seats; an unknown id is 404', async () => {
    const acct = await stack.seedAccount({ plan: 'solo' });
    expect((await op(`/accounts/${acct.id}`)).body).toMatchObject({
      id: acct.id,
      plan: { id: 'solo', max_seats: 1 },
      seats: { used: 1, max: 1 },
    });
    expectError(await op('/accounts/acct_nope'), 404, 'not_found_error', /acct_nope/);
    expectError(await op('/accounts/acct_nope/users'), 404, 'not_found_error', /acct_nope/);
    expectError(await op('/accounts/acct_nope/suspend', { method: 'POST' }), 404, 'not_found_error');
  });

  it('lists and searches accounts, newest first, in pages', async () => {
    const tag = `Searchable ${Date.now()}`;
    const made: string[] = [];
    for (let i = 0; i < 3; i++)
      made.push((await op('/accounts', { body: { name: `${tag} ${i}`, plan: 'team' } })).body.id);
    const found = (await op(`/accounts?search=${encodeURIComponent(tag)}`)).body;
    expect(found.data.map((a: any) => a.id)).toEqual([...made].reverse());
    const page = (await op(`/accounts?search=${encodeURIComponent(tag)}&limit=2`)).body;
    expect(page).toMatchObject({ has_more: true, first_id: made[2], last_id: made[1] });
    const next = (await op(`/accounts?search=${encodeURIComponent(tag)}&limit=2&after_id=${page.last_id}`))
      .body;
    expect(next.data.map((a: any) => a.id)).toEqual([made[0]]);
    expect((await op(`/accounts?search=${made[1]}`)).body.data.map((a: any) => a.id)).toEqual([made[1]]);
    expect((await op('/accounts?search=%25')).body.data.every((a: any) => a.name.includes('%'))).toBe(true);
    expectError(await op('/accounts?status=deleted'), 400, 'invalid_request_error', /status/);
  });

  it('suspends (model calls get 403 at once) and reactivates; lists suspended accounts', async () => {
    const acct = await stack.seedAccount();
    const key = (await op(`/accounts/${acct.id}/api_keys`, { body: { kind: 'live' } })).body;
    expect((await callModel(stack.gateway.url, key.key)).status).toBe(200);
    expect((await op(`/accounts/${acct.id}/suspend`, { method: 'POST' })).body.status).toBe('suspended');
    expectError(await callModel(stack.gateway.url, key.key), 403, 'permission_error', /suspended/);
    expect((await op('/accounts?status=suspended&limit=1000')).body.data.map((a: any) => a.id)).toContain(
      acct.id,
    );
    expect((await op(`/accounts/${acct.id}/reactivate`, { method: 'POST' })).body.status).toBe('active');
    expect((await callModel(stack.gateway.url, key.key)).status).toBe(200);
  });

  it('sets the provider key: validated, stored sealed, used for the next call, never returned', async () => {
    const acct = await stack.seedAccount();
    const key = (await op(`/accounts/${acct.id}/api_keys`, { body: {} })).body;
    expectError(
      await op(`/accounts/${acct.id}/provider_key`, { body: { provider_key: 'sk-wrong' } }),
      400,
      'invalid_request_error',
      /sk-ant-/,
    );
    const res = await op(`/accounts/${acct.id}/provider_key`, {
      body: { provider_key: `sk-ant-api03-${'not-the-emulators-key'}` },
    });
    expect(res.body.provider_key_hint).toBe('sk-ant-…-key');
    expect(JSON.stringify(res.body)).not.toContain('not-the-emulators');
    // The emulator only takes its own key: the next call is refused upstream, so the new key is in use
    // (the client hears that the account's provider key was refused: see provider-key-refused.test.ts).
    expectError(
      await callModel(stack.gateway.url, key.key),
      403,
      'permission_error',
      /provider refused this account's provider key/,
    );
    await op(`/accounts/${acct.id}/provider_key`, { body: { provider_key: PROVIDER_KEY } });
    expect((await callModel(stack.gateway.url, key.key)).status).toBe(200);
  });

  it('renames and moves plans; the solo plan needs a single member', async () => {
    const acct = await stack.seedAccount({ plan: 'team' });
    expect(
      (await op(`/accounts/${acct.id}`, { body: { name: 'Renamed', plan: 'scale' } })).body,
    ).toMatchObject({ name: 'Renamed', plan: 'scale' });
    await op(`/accounts/${acct.id}/users`, { body: { email: 'second@x.test' } });
    expectError(
      await op(`/accounts/${acct.id}`, { body: { plan: 'solo' } }),
      400,
      'invalid_request_error',
      /1 seat/,
    );
    expectError(await op(`/accounts/${acct.id}`, { body: {} }), 400, 'invalid_request_error', /at least one/);
  });
});

describe('plans and the cross-account view', () => {
  it('lists the plans', async () => {
    const { body } = await op('/plans');
    expect(body.data.map((p: any) => [p.id, p.price_cents, p.per_seat, p.max_seats, p.trial_days])).toEqual([
      ['solo', 900, false, 1, 14],
      ['team', 1900, true, null, 14],
      ['scale', 4900, true, null, 14],
    ]);
  });

  it('sums usage across accounts by account, model or day', async () => {
    const f = await seedReports(stack);
    const q = 'starting_at=2025-03-10&ending_at=2025-03-12';
    const byAccount = (await op(`/usage?by=account&${q}`)).body;
    expect(byAccount.data).toContainEqual(
      expect.objectContaining({
        account_id: f.acct.id,
        account_name: 'Reports',
        requests: 4,
        errors: 1,
        uncached_input_tokens: 1310,
      }),
    );
    expect(byAccount.data).toContainEqual(
      expect.objectContaining({ account_id: f.other.id, requests: 1, uncached_input_tokens: 9999 }),
    );
    const byDay = (await op(`/usage?by=day&${q}&api_key_ids[]=${f.keyA}`)).body;
    expect(byDay.data.map((r: any) => [r.day, r.requests])).toEqual([
      ['2025-03-10', 2],
      ['2025-03-11', 1],
    ]);
    expectError(await op(`/usage?by=key&${q}`), 400, 'invalid_request_error', /by/);
  });

  it('manages any account through the account API routes, audited as the operator', async () => {
    const acct = await stack.seedAccount();
    const m = (await op(`/accounts/${acct.id}/users`, { body: { email: 'op-added@x.test' } })).body;
    expect((await op(`/accounts/${acct.id}/users`)).body.data.map((u: any) => u.id)).toContain(m.id);
    const audit = (await op(`/accounts/${acct.id}/audit_log?action=user.add&target_id=${m.id}`)).body;
    expect(audit.data).toEqual([expect.objectContaining({ actor: 'operator' })]);
    const asCli = await api(stack.gateway.url, `/operator/v1/accounts/${acct.id}/users`, {
      bearer: TOKEN,
      body: { email: 'cli@x.test' },
      headers: { 'keygate-actor': 'cli' },
    });
    expect((await op(`/accounts/${acct.id}/audit_log?target_id=${asCli.body.id}`)).body.data[0].actor).toBe(
      'cli',
    );
  });
});
