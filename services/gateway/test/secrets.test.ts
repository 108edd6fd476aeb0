import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, createKey } from '../src/accounts/service';
import { generateKey } from '../src/auth/keys';
import { randomBase62 } from '../src/lib/ids';
import { PROVIDER_KEY, startStack, type Stack } from './harness';

const OPERATOR = `op-${randomBase62(40)}`;
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ KEYGATE_OPERATOR_TOKEN: OPERATOR });
});
afterAll(() => stack?.close());

interface Seen {
  what: string;
  status: number;
  text: string;
}

/** Every answer the workload got: status, headers and body, as text. */
const answers: Seen[] = [];

async function send(
  what: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Seen & { json: any }> {
  const res = await fetch(stack.gateway.url + path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { 'content-type': 'application/json', ...init.headers },
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  const text = `${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${await res.text()}`;
  const seen = { what, status: res.status, text };
  answers.push(seen);
  const body = text.slice(text.indexOf('\n\n') + 2);
  return { ...seen, json: body.startsWith('{') ? JSON.parse(body) : null };
}

const message = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    model: 'claude-opus-4-5',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'hello' }],
    ...extra,
  });
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** The part of a secret that identifies it: what follows its well-known prefix. */
const tail = (secret: string) =>
  secret.replace(/^(sk-ant-[a-z]+\d*-|kg_(live|test|admin)_|op-)/, '').slice(0, 24);

describe('no secret in any log line, error body, call record or audit row', () => {
  it('a workload of valid calls, wrong and misplaced credentials, admin and operator calls leaves no secret behind', async () => {
    const admin = await stack.newKey({ kind: 'admin' });
    const testKey = await stack.newKey({ kind: 'test' });
    const wrongProvider = `sk-ant-api03-${randomBase62(40)}`;
    const refused = await createAccount(stack.deps, {
      name: 'Refused',
      plan: 'team',
      providerKey: wrongProvider,
      adminEmail: `a-${randomBase62(6)}@refused.test`,
    });
    const refusedLive = await createKey(stack.deps, {
      accountId: refused.account.id,
      kind: 'live',
      memberId: null,
      app: null,
      environment: null,
    });
    const mistaken = `sk-ant-api03-${randomBase62(40)}`;
    const guessedLive = generateKey('live');
    const guessedAdmin = generateKey('admin');
    const otherProvider = `sk-ant-api03-${randomBase62(40)}`;
    // Shown once, in the answer that creates them; nowhere else.
    const created: Array<{ secret: string; in: Seen }> = [];

    // Valid calls: live and test keys, JSON and streams, bearer and x-api-key.
    expect(
      (await send('call', '/v1/messages', { headers: bearer(stack.appKey), body: message() })).status,
    ).toBe(200);
    expect(
      (
        await send('stream', '/v1/messages', {
          headers: bearer(stack.appKey),
          body: message({ stream: true }),
        })
      ).status,
    ).toBe(200);
    expect(
      (await send('x-api-key', '/v1/messages', { headers: { 'x-api-key': testKey.secret }, body: message() }))
        .status,
    ).toBe(200);
    expect(
      (await send('count', '/v1/messages/count_tokens', { headers: bearer(stack.appKey), body: message() }))
        .status,
    ).toBe(200);
    expect((await send('models', '/v1/models', { headers: bearer(stack.appKey) })).status).toBe(200);
    // Refused and malformed calls that carry a secret in the body or headers.
    expect(
      (
        await send('bad json with a key inside', '/v1/messages', {
          headers: bearer(stack.appKey),
          body: `{"model": ${stack.appKey} "max_tokens": 1`,
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await send('model is a key', '/v1/messages', {
          headers: bearer(stack.appKey),
          body: message({ model: 7, metadata: { user_id: stack.appKey } }),
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await send('group id is a key', '/v1/messages', {
          headers: { ...bearer(stack.appKey), 'keygate-group-id': `${mistaken} x` },
          body: message(),
        })
      ).status,
    ).toBe(400);
    // Wrong keys and provider keys sent by mistake.
    for (const [what, headers] of [
      ['guessed app key', bearer(guessedLive)],
      ['guessed app key as x-api-key', { 'x-api-key': guessedLive }],
      ['provider key as bearer', bearer(mistaken)],
      ['provider key as x-api-key', { 'x-api-key': mistaken }],
      ['admin key on the model route', bearer(admin.secret)],
      ['malformed key', bearer(`kg_live_${randomBase62(20)}`)],
    ] as const) {
      expect((await send(what, '/v1/messages', { headers, body: message() })).status).toBe(401);
    }
    // The provider refuses an account's provider key.
    expect(
      (
        await send('refused provider key', '/v1/messages', {
          headers: bearer(refusedLive.secret),
          body: message(),
        })
      ).status,
    ).toBe(403);

    // Account API with an admin key.
    expect(
      (await send('me', '/v1/organizations/me', { headers: { 'x-api-key': admin.secret } })).status,
    ).toBe(200);
    const made = await send('create key', '/v1/organizations/api_keys', {
      headers: { 'x-api-key': admin.secret },
      body: JSON.stringify({ name: 'made', kind: 'live' }),
    });
    expect(made.status).toBe(201);
    created.push({ secret: made.json.key, in: made });
    const rotated = await send('rotate key', `/v1/organizations/api_keys/${made.json.id}/rotate`, {
      headers: { 'x-api-key': admin.secret },
      body: '{}',
    });
    expect(rotated.status).toBe(200);
    created.push({ secret: rotated.json.key, in: rotated });
    expect(
      (await send('list keys', '/v1/organizations/api_keys', { headers: { 'x-api-key': admin.secret } }))
        .status,
    ).toBe(200);
    expect(
      (await send('call log', '/v1/organizations/requests', { headers: { 'x-api-key': admin.secret } }))
        .status,
    ).toBe(200);
    expect(
      (await send('guessed admin key', '/v1/organizations/me', { headers: { 'x-api-key': guessedAdmin } }))
        .status,
    ).toBe(401);
    expect(
      (
        await send('provider key on the account API', '/v1/organizations/me', {
          headers: { 'x-api-key': mistaken },
        })
      ).status,
    ).toBe(401);
    expect(
      (
        await send('bad json to the account API', '/v1/organizations/api_keys', {
          headers: { 'x-api-key': admin.secret },
          body: `{"name": "${admin.secret}`,
        })
      ).status,
    ).toBe(400);

    // Operator API.
    const op = { authorization: `Bearer ${OPERATOR}` };
    const acct = await send('create account', '/operator/v1/accounts', {
      headers: op,
      body: JSON.stringify({
        name: 'Op Co',
        plan: 'team',
        provider_key: otherProvider,
        admin_email: 'op@co.test',
      }),
    });
    expect(acct.status).toBe(201);
    created.push({
      secret: acct.json.admin.key.key ?? acct.json.admin.key.secret ?? acct.json.admin.secret,
      in: acct,
    });
    expect(
      (
        await send('set provider key', `/operator/v1/accounts/${acct.json.id}/provider_key`, {
          headers: op,
          body: JSON.stringify({ provider_key: PROVIDER_KEY }),
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await send('bad provider key body', `/operator/v1/accounts/${acct.json.id}/provider_key`, {
          headers: op,
          body: JSON.stringify({ provider_key: 12, extra: otherProvider }),
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await send('bad json to the operator API', '/operator/v1/accounts', {
          headers: op,
          body: `{"provider_key": ${otherProvider}`,
        })
      ).status,
    ).toBe(400);
    expect((await send('list accounts', '/operator/v1/accounts', { headers: op })).status).toBe(200);
    expect(
      (await send('wrong operator token', '/operator/v1/accounts', { headers: bearer(`${OPERATOR}x`) }))
        .status,
    ).toBe(401);
    expect(
      (await send('app key as operator token', '/operator/v1/accounts', { headers: bearer(stack.appKey) }))
        .status,
    ).toBe(401);

    const secrets: Record<string, string> = {
      'app key': stack.appKey,
      'test key': testKey.secret,
      'admin key': admin.secret,
      'refused account key': refusedLive.secret,
      'refused account admin key': refused.admin!.secret,
      'provider key': PROVIDER_KEY,
      'refused provider key': wrongProvider,
      'other provider key': otherProvider,
      'provider key sent by mistake': mistaken,
      'guessed app key': guessedLive,
      'guessed admin key': guessedAdmin,
      'operator token': OPERATOR,
      ...Object.fromEntries(created.map((c, i) => [`created key ${i}`, c.secret])),
    };
    for (const [name, s] of Object.entries(secrets)) expect(s, name).toMatch(/^\S{30,}$/);

    await stack.gateway.writer.flush();
    const sql = stack.gateway.store.db.sql;
    const tables: Record<string, readonly unknown[]> = {
      calls: await sql`select * from calls`,
      audit_log: await sql`select * from audit_log`,
      invalidations: await sql`select * from invalidations`,
    };
    expect(tables.calls!.length).toBeGreaterThanOrEqual(8);
    expect(tables.audit_log!.length).toBeGreaterThanOrEqual(3);

    const places: Array<[string, string]> = [
      ...stack.logs.map((l, i): [string, string] => [`log line ${i}`, l]),
      ...answers
        .filter((a) => !created.some((c) => c.in.text === a.text))
        .map((a): [string, string] => [`answer to ${a.what} (${a.status})`, a.text]),
      ...Object.entries(tables).flatMap(([t, rows]) =>
        rows.map((r, i): [string, string] => [`${t} row ${i}`, JSON.stringify(r)]),
      ),
    ];
    expect(places.length).toBeGreaterThan(40);
    const leaks: string[] = [];
    for (const [where, text] of places) {
      for (const [name, secret] of Object.entries(secrets))
        if (text.includes(tail(secret))) leaks.push(`${name} in ${where}: ${text.slice(0, 300)}`);
    }
    expect(leaks).toEqual([]);
    // The answers that create a key show it, once: only there.
    for (const c of created) expect(c.in.text).toContain(c.secret);
  });
});

describe('credential guessing is rate-limited per address and per kind (security)', () => {
  let own: Stack;
  beforeAll(async () => {
    own = await startStack({ KEYGATE_OPERATOR_TOKEN: OPERATOR });
  });
  afterAll(() => own?.close());

  it('wrong operator tokens: 429 in the provider shape after the budget, even for the right token, until the window ends', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++)
      statuses.push(
        (await fetch(`${own.gateway.url}/operator/v1/accounts`, { headers: bearer(`${OPERATOR}-${i}`) }))
          .status,
      );
    expect(statuses.slice(0, 20)).toEqual(Array(20).fill(401));
    expect(statuses[20]).toBe(429);
    const res = await fetch(`${own.gateway.url}/operator/v1/accounts`, { headers: bearer(OPERATOR) });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await res.json()).toMatchObject({
      type: 'error',
      error: { type: 'rate_limit_error', message: expect.stringMatching(/operator tokens/) },
      request_id: res.headers.get('request-id'),
    });
    // App keys are counted apart.
    expect(
      (
        await fetch(`${own.gateway.url}/v1/messages`, {
          method: 'POST',
          headers: bearer(own.appKey),
          body: message(),
        })
      ).status,
    ).toBe(200);
  });

  it('unknown admin keys: 429 after 30 a minute from one address; app keys keep their own budget', async () => {
    const admin = (key: string) =>
      fetch(`${own.gateway.url}/v1/organizations/me`, { headers: { 'x-api-key': key } });
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) statuses.push((await admin(generateKey('admin'))).status);
    expect(statuses.slice(0, 30)).toEqual(Array(30).fill(401));
    const refused = await admin(generateKey('admin'));
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({
      type: 'error',
      error: { type: 'rate_limit_error', message: expect.stringMatching(/admin keys/) },
    });
    // A guessed app key from the same address still gets looked up (401), and a real one works.
    expect(
      (
        await fetch(`${own.gateway.url}/v1/messages`, {
          method: 'POST',
          headers: bearer(generateKey('live')),
          body: message(),
        })
      ).status,
    ).toBe(401);
    expect(
      (
        await fetch(`${own.gateway.url}/v1/messages`, {
          method: 'POST',
          headers: bearer(own.appKey),
          body: message(),
        })
      ).status,
    ).toBe(200);
  });
});
