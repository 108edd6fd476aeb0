import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startStack, type SeededAccount, type Stack } from './harness';
import { dashboardSession, postSignIn } from './dashboard-http';

let stack: Stack;
let acct: SeededAccount;
beforeAll(async () => {
  stack = await startStack();
  acct = await stack.seedAccount();
});
afterAll(() => stack?.close());

describe('sign-in lockout', () => {
  it("the operator is never locked out by someone else's guesses at the operator token", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await postSignIn(stack.gateway.url, `not-the-operator-token-${i}`);
      statuses.push(res.status);
    }
    // Wrong guesses: refused, then slowed down once the credential's bucket is full.
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    const right = await postSignIn(stack.gateway.url, stack.gateway.operatorToken);
    expect(right.status).toBe(303);
    expect(right.headers.get('location')).toBe('/dashboard');
    // A wrong guess after that is still refused with 429.
    expect((await postSignIn(stack.gateway.url, 'not-the-operator-token-x')).status).toBe(429);
  });

  it('the right admin key signs in although its prefix bucket is full of guesses', async () => {
    const key = acct.adminKey;
    const guess = `${key.slice(0, 20)}${'x'.repeat(key.length - 20)}`;
    for (let i = 0; i < 5; i++) expect((await postSignIn(stack.gateway.url, guess)).status).toBe(401);
    expect((await postSignIn(stack.gateway.url, guess)).status).toBe(429);
    expect((await postSignIn(stack.gateway.url, key)).status).toBe(303);
  });
});

describe('cross-site form posts', () => {
  it('answer 403 with a page, and log one line at info with no stack', async () => {
    const s = await dashboardSession(stack.gateway.url, acct.adminKey);
    const from = stack.logs.length;
    const res = await fetch(`${stack.gateway.url}/dashboard/settings`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: s.cookie,
        origin: 'https://evil.example',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: `_csrf=${s.csrf}&time_zone=UTC`,
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('Cross-site form posts are refused');
    const lines = stack.logs.slice(from).map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.level === 'error' || l.level === 50)).toEqual([]);
    expect(lines.some((l) => l.msg === 'cross-site form post refused')).toBe(true);
    expect(stack.logs.slice(from).join('\n')).not.toMatch(/stack|HTTPException/);
  });
});

describe('NUL bytes in text filters answer 400, not a PostgreSQL 500', () => {
  it.each([
    '/v1/organizations/requests?model=claude%00x',
    '/v1/organizations/requests?group_id=%00',
    '/v1/organizations/audit_log?actor=a%00b',
    '/v1/organizations/api_keys/key_%00',
    '/v1/organizations/users?after_id=%00',
    '/v1/organizations/usage_report/messages?starting_at=2026-11-01T00:00:00Z&models[]=a%00',
  ])('account API: %s', async (path) => {
    const res = await api(stack.gateway.url, path, { key: acct.adminKey });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(res.body.error.message).toMatch(/NUL/);
  });

  it('account API: a NUL inside a JSON body', async () => {
    const res = await api(stack.gateway.url, '/v1/organizations/api_keys', {
      key: acct.adminKey,
      body: { name: 'a\u0000b', kind: 'live' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe('name: must not contain NUL (\\u0000) characters.');
  });

  it('operator API: a NUL in a search', async () => {
    const res = await api(stack.gateway.url, '/operator/v1/accounts?search=a%00', {
      bearer: stack.gateway.operatorToken,
    });
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe('invalid_request_error');
  });

  it.each(['/dashboard/calls?model=a%00b', '/dashboard/calls?group=%00', '/dashboard/keys/key_%00'])(
    'dashboard: %s answers a 400 page',
    async (path) => {
      const s = await dashboardSession(stack.gateway.url, acct.adminKey);
      const res = await s.get(path);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    },
  );
});
