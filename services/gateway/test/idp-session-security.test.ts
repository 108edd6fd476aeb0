import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useIdpStack } from './idp-fixture';
import { waitFor } from './kit/wait';
import { startTestIdp } from './oidc-provider';

const ctx = useIdpStack();

/** A first `keygate token` run for `login`, approved in the browser: its config home and refresh token. */
async function deviceSignIn(login: string) {
  const home = join(ctx.root, `${login}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(home, { recursive: true });
  const run = await ctx.keygateToken(home, (url) => ctx.approveDevice(url, login));
  expect(run.code, run.stderr).toBe(0);
  return { home, token: run.stdout.trim(), refresh: () => savedRefresh(home) };
}

function savedRefresh(home: string): string {
  const all = JSON.parse(readFileSync(join(home, '.config/keygate/credentials.json'), 'utf8'));
  return (Object.values(all)[0] as { refresh_token: string }).refresh_token;
}

const refresh = (refreshToken: string) =>
  fetch(`${ctx.stack.gateway.url}/idp/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ refresh_token: refreshToken }),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

const statusOf = async (email: string) =>
  (
    await ctx.stack.gateway.store.db.sql`
      select status from members where account_id = ${ctx.account.id} and email = ${email}`
  )[0]?.status;

/** A member token's answer from the gateway (401 once refused). */
const modelsWith = (token: string) =>
  fetch(`${ctx.stack.gateway.url}/v1/models`, { headers: { 'x-api-key': token } }).then((r) => r.status);

describe('device sign-ins: refresh tokens and deprovisioning (issue 29)', () => {
  it('the refresh token rotates on every renewal; a spent one used again within 30 s gets the same answer, later it ends the whole sign-in', {
    timeout: 90_000,
  }, async () => {
    expect((await ctx.connect()).status).toBe(200);
    const alice = await deviceSignIn('alice');
    const first = alice.refresh();
    const again = await ctx.keygateToken(alice.home);
    expect(again.code, again.stderr).toBe(0);
    const second = alice.refresh();
    expect(second).toMatch(/^kgr_/);
    expect(second).not.toBe(first);
    const token = again.stdout.trim();
    expect(await modelsWith(token)).toBe(200);

    // Presented again at once (a second Claude Code window racing the first), the spent token
    // gets the same answer: no new token, no ended sign-in.
    const racing = await Promise.all([refresh(first), refresh(first)]);
    for (const r of racing) {
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ refresh_token: second, token });
    }
    // The stored answer is sealed, never the tokens in the clear.
    const answers = await ctx.stack.gateway.store.db.sql`
      select answer_sealed from idp_refresh_spent where answer_sealed is not null`;
    expect(answers.length).toBeGreaterThan(0);
    for (const a of answers) expect(a.answer_sealed).not.toMatch(/kgr_|kg_live_/);

    // Past the reuse window, someone replays the spent token: refused, and the session it
    // belonged to ends with it.
    await ctx.stack.gateway.store.db
      .sql`update idp_refresh_spent set spent_at = spent_at - interval '31 seconds'`;
    const replay = await refresh(first);
    expect(replay.status).toBe(401);
    expect(replay.body.error.message).toMatch(/already used/);
    expect((await refresh(second)).status).toBe(401);
    await waitFor(async () => (await modelsWith(token)) === 401 || null, {
      timeout: 5_000,
      what: 'the member token refused',
    });
    // Refresh tokens are stored only as hashes.
    const rows = await ctx.stack.gateway.store.db.sql`select refresh_hash from idp_sessions`;
    for (const r of rows) expect(Buffer.from(r.refresh_hash).toString()).not.toContain('kgr_');
    // The person is not deprovisioned for it: a new sign-in works.
    expect(await statusOf('alice@acme.test')).toBe('active');
  });

  it('a sign-in not renewed for longer than the idle time ends', { timeout: 90_000 }, async () => {
    expect((await ctx.connect()).status).toBe(200);
    const carol = await deviceSignIn('carol');
    await ctx.stack.gateway.store.db.sql`
      update idp_sessions set refreshed_at = now() - interval '31 days'
      where member_id = (select id from members where account_id = ${ctx.account.id} and email = 'carol@acme.test')`;
    const late = await refresh(carol.refresh());
    expect(late.status).toBe(401);
    expect(late.body.error.message).toMatch(/not renewed for too long/);
    expect(await statusOf('carol@acme.test')).toBe('active');
  });

  it('disconnecting the provider ends device sign-ins but deprovisions no one', {
    timeout: 90_000,
  }, async () => {
    expect((await ctx.connect()).status).toBe(200);
    const ivy = await deviceSignIn('ivy');
    const off = await fetch(`${ctx.stack.gateway.url}/v1/organizations/identity_provider`, {
      method: 'DELETE',
      headers: { 'x-api-key': ctx.account.adminKey },
    });
    expect(off.status).toBe(200);
    const res = await refresh(ivy.refresh());
    expect(res.status).toBe(401);
    expect(res.body.error.message).toMatch(/disconnected/);
    expect(await statusOf('ivy@acme.test')).toBe('active');
  });

  it("the provider's invalid_grant never deprovisions the account's last admin", {
    timeout: 90_000,
  }, async () => {
    const [adminRow] = await ctx.stack.gateway.store.db.sql`
      select email from members where id = ${ctx.account.adminMemberId}`;
    const adminEmail = adminRow!.email as string;
    ctx.idp.people.set('boss', { email: adminEmail, name: 'Boss', groups: [] });
    expect((await ctx.connect({ allowed_domains: [], link_existing_members: true })).status).toBe(200);
    const boss = await deviceSignIn('boss');
    ctx.idp.people.get('boss')!.disabled = true;
    const res = await refresh(boss.refresh());
    expect(res.status).toBe(401);
    expect(res.body.error.message).toMatch(/identity provider no longer signs you in/);
    expect(await statusOf(adminEmail)).toBe('active');
    const audit = await ctx.stack.gateway.store.db.sql`
      select action from audit_log where account_id = ${ctx.account.id} and target_id = ${ctx.account.adminMemberId}
        and action like 'member.deprovision%'`;
    expect(audit.map((a) => a.action)).toEqual(['member.deprovision_refused']);
    const me = await fetch(`${ctx.stack.gateway.url}/v1/organizations/me`, {
      headers: { 'x-api-key': ctx.account.adminKey },
    });
    expect(me.status).toBe(200);
  });

  it('a new issuer needs the client secret again, and ends the sign-ins of the old one', {
    timeout: 90_000,
  }, async () => {
    expect((await ctx.connect()).status).toBe(200);
    const dave = await deviceSignIn('dave');
    const other = await startTestIdp({
      redirectUris: [`${ctx.stack.gateway.url}/dashboard/sign-in/idp/callback`],
      people: { dave: { email: 'dave@acme.test', name: 'Dave', groups: [] } },
    });
    try {
      const moved = await ctx.connect({ issuer: other.issuer, client_secret: undefined });
      expect(moved.status).toBe(400);
      expect(((await moved.json()) as any).error.message).toMatch(
        /client_secret: required again when the issuer changes/,
      );
      expect((await ctx.stack.gateway.store.identity.provider(ctx.account.id))!.issuer).toBe(ctx.idp.issuer);

      expect((await ctx.connect({ issuer: other.issuer, client_secret: other.clientSecret })).status).toBe(
        200,
      );
      const res = await refresh(dave.refresh());
      expect(res.status).toBe(401);
      // Neither the old provider's refresh token nor the secret went to the new issuer's token endpoint.
      expect(other.requests.filter((r) => r.startsWith('POST /token'))).toEqual([]);
      expect(await statusOf('dave@acme.test')).toBe('active');
    } finally {
      await other.close();
    }
  });

  it('a poll sooner than the interval is answered slow_down by Keygate, the provider not asked', async () => {
    expect((await ctx.connect()).status).toBe(200);
    const post = (path: string, body: unknown) =>
      fetch(`${ctx.stack.gateway.url}/idp/v1${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    const start = await post('/device/code', { account_id: ctx.account.id });
    expect(start.status).toBe(200);
    const asked = () => ctx.idp.requests.filter((r) => r === 'POST /token').length;
    const before = asked();
    const poll = () =>
      post('/device/token', { account_id: ctx.account.id, device_code: start.body.device_code });
    const interval = start.body.interval as number;
    expect(await poll()).toEqual({ status: 200, body: { status: 'slow_down', interval: interval + 5 } });
    expect(await poll()).toEqual({ status: 200, body: { status: 'slow_down', interval: interval + 10 } });
    expect(asked()).toBe(before);
  });

  it('guessed device codes are cut off per client address', async () => {
    expect((await ctx.connect()).status).toBe(200);
    const poll = (code: string) =>
      fetch(`${ctx.stack.gateway.url}/idp/v1/device/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ account_id: ctx.account.id, device_code: code }),
      });
    let res = await poll('guess-0');
    let refused = 0;
    while (res.status === 400 && refused <= 31) {
      refused++;
      res = await poll(`guess-${refused}`);
    }
    expect(res.status).toBe(429);
    expect(refused).toBe(30);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
  });
});
