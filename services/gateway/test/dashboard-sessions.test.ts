import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Gateway } from '../src/server';
import { api, startStack, type SeededAccount, type Stack } from './harness';
import { dashboardSession, postSignIn, type DashboardSession } from './dashboard-http';

let stack: Stack;
let peer: Gateway;
let acct: SeededAccount;
beforeAll(async () => {
  stack = await startStack();
  // A second instance on the same database: every change must reach its sessions too.
  peer = await stack.startPeer();
  acct = await stack.seedAccount();
});
afterAll(() => stack?.close());

/** The session as another instance sees it: the same cookie sent to the peer. */
const onPeer = (s: DashboardSession, path: string) =>
  fetch(`${peer.url}${path}`, { redirect: 'manual', headers: { cookie: s.cookie } });
const signedOut = (res: Response) =>
  res.status === 303 && res.headers.get('location') === '/dashboard/sign-in';

async function adminKeyOfNewAdmin(): Promise<{ memberId: string; key: string; keyId: string }> {
  const n = Math.random().toString(36).slice(2, 8);
  const member = await api(stack.gateway.url, '/v1/organizations/users', {
    key: acct.adminKey,
    body: { email: `second-${n}@example.com`, name: `Second ${n}`, role: 'admin' },
  });
  expect(member.status).toBe(201);
  const key = await api(stack.gateway.url, '/v1/organizations/api_keys', {
    key: acct.adminKey,
    body: { name: `admin ${n}`, kind: 'admin', member_id: member.body.id },
  });
  expect(key.status).toBe(201);
  return { memberId: member.body.id, key: key.body.secret ?? key.body.key, keyId: key.body.id };
}

describe('a dashboard session ends with the credential that opened it, on every instance', () => {
  it('the key is rotated, even with a grace period for API calls', async () => {
    const { key, keyId } = await adminKeyOfNewAdmin();
    const s = await dashboardSession(stack.gateway.url, key);
    expect((await s.get('/dashboard/settings')).status).toBe(200);
    expect((await onPeer(s, '/dashboard/settings')).status).toBe(200);
    const rotated = await api(stack.gateway.url, `/v1/organizations/api_keys/${keyId}/rotate`, {
      key: acct.adminKey,
      body: { grace_period_seconds: 3600 },
    });
    expect(rotated.status).toBe(200);
    // The old secret still calls the API during its grace period; the session does not go on.
    expect((await api(stack.gateway.url, '/v1/organizations/me', { key })).status).toBe(200);
    expect(signedOut(await s.get('/dashboard/settings'))).toBe(true);
    expect(signedOut(await onPeer(s, '/dashboard/settings'))).toBe(true);
    // The old secret opens no new session; the new secret does.
    const refused = await postSignIn(stack.gateway.url, key);
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain('This key was rotated');

    const again = await dashboardSession(stack.gateway.url, rotated.body.secret ?? rotated.body.key);
    expect((await again.get('/dashboard/settings')).status).toBe(200);
  });

  it('the key expires', async () => {
    const { key, keyId } = await adminKeyOfNewAdmin();
    const s = await dashboardSession(stack.gateway.url, key);
    expect((await s.get('/dashboard/keys')).status).toBe(200);
    // The moment passes (the database's clock decides, as for the API).
    await stack.gateway.store.db
      .sql`update api_keys set expires_at = now() - interval '1 second' where id = ${keyId}`;
    expect(signedOut(await s.get('/dashboard/keys'))).toBe(true);
    expect(signedOut(await onPeer(s, '/dashboard/keys'))).toBe(true);
  });

  it('the member is demoted from admin: the session keeps only that member’s view', async () => {
    const { memberId, key } = await adminKeyOfNewAdmin();
    const s = await dashboardSession(stack.gateway.url, key);
    const change = () => s.post('/dashboard/settings', { time_zone: 'UTC' });
    expect((await change()).status).toBe(200);
    const demoted = await api(stack.gateway.url, `/v1/organizations/users/${memberId}`, {
      key: acct.adminKey,
      body: { role: 'developer' },
    });
    expect(demoted.status).toBe(200);
    expect((await change()).status).toBe(403);
    const created = await s.post('/dashboard/keys', {
      kind: 'live',
      name: 'after demotion',
      member_id: acct.adminMemberId,
    });
    // A member's key form makes keys for themselves only, if at all: never for another member.
    const keys = await api(stack.gateway.url, '/v1/organizations/api_keys?limit=1000', {
      key: acct.adminKey,
    });
    const made = keys.body.data.filter((k: any) => k.name === 'after demotion');
    expect(made.every((k: any) => k.member_id === memberId)).toBe(true);
    expect([200, 403]).toContain(created.status);
    expect((await onPeer(s, '/dashboard/settings')).status).toBe(200);
    const peerPost = await fetch(`${peer.url}/dashboard/settings`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: s.cookie, origin: peer.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: `_csrf=${s.csrf}&time_zone=UTC`,
    });
    expect(peerPost.status).toBe(403);
  });

  it('the operator token changes', async () => {
    const s = await dashboardSession(stack.gateway.url, stack.gateway.operatorToken);
    expect((await s.get('/dashboard')).status).toBe(200);
    // An instance started with a new token (as an operator rolls a token change out).
    const renewed = await stack.startPeer({ KEYGATE_OPERATOR_TOKEN: 'a-brand-new-operator-token-0123' });
    expect(
      signedOut(
        await fetch(`${renewed.url}/dashboard`, { redirect: 'manual', headers: { cookie: s.cookie } }),
      ),
    ).toBe(true);
    const fresh = await dashboardSession(renewed.url, 'a-brand-new-operator-token-0123');
    expect((await fresh.get('/dashboard')).status).toBe(200);
  });
});

describe("the operator's read-only view of an account", () => {
  it('refuses every form post of the dashboard on the server, and writes nothing to the audit log', async () => {
    const s = await dashboardSession(stack.gateway.url, stack.gateway.operatorToken);
    const posts = stack.gateway.routes
      .filter((r) => r.method === 'POST' && r.path.startsWith('/dashboard/'))
      .map((r) => r.path)
      .filter((p) => p !== '/dashboard/sign-in' && p !== '/dashboard/sign-out');
    expect(posts.length).toBeGreaterThan(8);
    const audit = () =>
      api(stack.gateway.url, '/v1/organizations/audit_log?limit=1000', { key: acct.adminKey });
    const before = (await audit()).body.data.length;
    for (const path of new Set(posts)) {
      const concrete = path.replace(/:[a-z_]+/g, 'x');
      const res = await s.post(`${concrete}?account=${acct.id}`, {
        name: 'by operator',
        url: 'https://93.184.215.14/hook',
        events: 'budget.threshold_crossed',
        amount_usd: '5',
        plan: 'scale',
        time_zone: 'UTC',
        kind: 'live',
        id: 'x',
      });
      expect([path, res.status]).toEqual([path, 403]);
      expect(await res.text()).toContain('read-only');
    }
    expect((await audit()).body.data.length).toBe(before);
  });
});
