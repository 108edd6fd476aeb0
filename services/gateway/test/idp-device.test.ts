import Anthropic from '@anthropic-ai/sdk';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, freshHome, killClaudeRuns, runClaude } from './claude-code';
import type { SeededAccount, Stack } from './harness';
import { useIdpStack } from './idp-fixture';
import { waitFor } from './kit/wait';
import type { TestIdp } from './oidc-provider';
import { MemberTokens } from '../src/identity/tokens';
import { EgressPolicy } from '../src/lib/egress';

const BIN = join(import.meta.dirname, '../bin/keygate.js');
const TOKEN_TTL_MS = 120_000;

const ctx = useIdpStack({ KEYGATE_MEMBER_TOKEN_TTL_MS: String(TOKEN_TTL_MS) });
const connect = ctx.connect;
let stack: Stack;
let idp: TestIdp;
let account: SeededAccount;
let root: string;
let blackholePort: number;

beforeAll(async () => {
  ({ stack, idp, account, root } = ctx);
  blackholePort = await closedPort();
});
afterEach(killClaudeRuns);

const { keygateToken, approveDevice } = ctx;

const calls = (token: string) =>
  new Anthropic({ baseURL: stack.gateway.url, apiKey: token, maxRetries: 0 }).messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'hi' }],
  });

describe('Claude Code without long-lived keys: the device flow through Keygate', () => {
  it('connecting the provider: discovery through the egress policy, secret never shown, bad input refused', async () => {
    const bad = await connect({ issuer: 'http://10.255.255.1/' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error).toEqual({
      type: 'invalid_request_error',
      message:
        'issuer: blocked by the egress policy (an operator allows internal hosts with KEYGATE_EGRESS_ALLOW).',
    });
    const notOidc = await connect({ issuer: `${stack.gateway.url}/nothing` });
    expect(notOidc.status).toBe(400);
    const groupless = await connect({ provision: 'group' });
    expect(groupless.status).toBe(400);
    expect(((await groupless.json()) as any).error.message).toMatch(/provision_groups/);

    const res = await connect();
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(text).not.toContain(idp.clientSecret);
    expect(JSON.parse(text)).toMatchObject({
      type: 'identity_provider',
      name: 'Acme SSO',
      issuer: idp.issuer,
      client_id: idp.clientId,
      client_secret_set: true,
      allowed_domains: ['acme.test'],
      groups_claim: 'groups',
      provision: 'domain',
    });
    const [row] = await stack.gateway.store.db.sql`
      select client_secret_sealed from identity_providers where account_id = ${account.id}`;
    expect(row!.client_secret_sealed).toMatch(/^v2\./);
    expect(row!.client_secret_sealed).not.toContain(idp.clientSecret);
  });

  it('signs in, calls through the gateway with a short-lived token, and a person disabled at the provider loses access within its life', {
    timeout: 240_000,
  }, async () => {
    expect((await connect()).status).toBe(200);
    const configHome = join(root, 'alice');
    mkdirSync(configHome, { recursive: true });
    // First run: the device flow; the person approves it in a browser while the helper polls.
    const first = await keygateToken(configHome, (url) => approveDevice(url, 'alice'));
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(
      /Sign in to Keygate with Acme SSO:\n {2}open http:\/\/127\.0\.0\.1:\d+\/device\n {2}and enter the code \S+/,
    );
    const token1 = first.stdout.trim();
    expect(token1).toMatch(/^kg_live_/);

    // The refresh token is kept private: folder 0700, file 0600; the member token is not stored.
    const dir = join(configHome, '.config/keygate');
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'credentials.json')).mode & 0o777).toBe(0o600);
    const saved = readFileSync(join(dir, 'credentials.json'), 'utf8');
    expect(saved).toContain('kgr_');
    expect(saved).not.toContain(token1);

    // Provisioned on first sign-in, with the groups claim; the token is a member key that expires.
    const sql = stack.gateway.store.db.sql;
    const [member] = await sql`
      select id, email, role, status, idp_groups from members where account_id = ${account.id} and email = 'alice@acme.test'`;
    expect(member).toMatchObject({
      role: 'developer',
      status: 'active',
      idp_groups: ['eng', 'claude-users'],
    });
    const [key] =
      await sql`select id, member_id, expires_at, kind from api_keys where member_id = ${member!.id}`;
    expect(key!.kind).toBe('live');
    const life = (key!.expires_at as Date).getTime() - Date.now();
    expect(life).toBeGreaterThan(TOKEN_TTL_MS - 30_000);
    expect(life).toBeLessThanOrEqual(TOKEN_TTL_MS);
    expect((await calls(token1)).type).toBe('message');

    // Real Claude Code, its key from `keygate token` (a silent refresh this time).
    const home = join(root, 'claude-home');
    freshHome(home);
    mkdirSync(join(home, '.claude'));
    // The README's settings.json, with `keygate` on the PATH as an installed CLI is.
    writeFileSync(
      join(home, '.claude/settings.json'),
      JSON.stringify({
        env: {
          ANTHROPIC_BASE_URL: stack.gateway.url,
          KEYGATE_ACCOUNT: account.id,
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        },
        apiKeyHelper: 'keygate token',
      }),
    );
    const bin = join(root, 'bin');
    mkdirSync(bin, { recursive: true });
    symlinkSync(BIN, join(bin, 'keygate'));
    const claudeEnv = {
      PATH: `${bin}:${dirname(process.execPath)}:${process.env.PATH}`,
      XDG_CONFIG_HOME: join(configHome, '.config'),
    };
    const sessionId = randomUUID();
    const run = await runClaude({
      home,
      prompt: 'Say hello',
      sessionId,
      env: claudeEnv,
      blackholePort,
      timeoutMs: 90_000,
    });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^Emulated reply to: /);
    await stack.gateway.writer.flush();
    const session =
      await sql`select key_id, member_id, status from calls where account_id = ${account.id} and group_id = ${sessionId}`;
    expect(session.length).toBeGreaterThan(0);
    expect(session.map((r) => [r.key_id, r.member_id, r.status])).toEqual(
      session.map(() => [key!.id, member!.id, 200]),
    );

    // A refresh now: a fresh token, the same key id, still good.
    const again = await keygateToken(configHome);
    expect(again.code, again.stderr).toBe(0);
    const token2 = again.stdout.trim();
    expect(token2).not.toBe(token1);
    expect((await calls(token2)).type).toBe('message');
    const [renewed] = await sql`select expires_at from api_keys where id = ${key!.id}`;
    const expiresAt = (renewed!.expires_at as Date).getTime();

    // Expiry is honoured on the cached path: a token issued with a 1.5 s life is refused once it ends.
    const shortLived = new MemberTokens({
      store: stack.gateway.store,
      box: stack.deps.box,
      egress: new EgressPolicy(['127.0.0.1']),
      clock: Date.now,
      tokenTtlMs: 1_500,
    });
    const credentials = JSON.parse(readFileSync(join(dir, 'credentials.json'), 'utf8')) as Record<
      string,
      { refresh_token: string }
    >;
    const slot = Object.values(credentials)[0]!;
    const brief = await shortLived.refresh(slot.refresh_token);
    await shortLived.oidc.close();
    // The refresh token rotated: the helper's file gets the new one, as `keygate token` keeps it.
    expect(brief.refresh_token).toMatch(/^kgr_/);
    expect(brief.refresh_token).not.toBe(slot.refresh_token);
    slot.refresh_token = brief.refresh_token!;
    writeFileSync(join(dir, 'credentials.json'), JSON.stringify(credentials));
    expect((await calls(brief.token)).type).toBe('message');
    const expired = await waitFor(
      () =>
        calls(brief.token).then(
          () => null,
          (err: { status?: number; error?: any }) => err,
        ),
      { timeout: 10_000, what: 'the short-lived token refused' },
    );
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(brief.expires_at));
    expect(expired.status).toBe(401);
    expect(expired.error?.error?.message).toMatch(/expired/);

    // The person is disabled at the provider: the next refresh fails there, the member goes at once.
    idp.people.get('alice')!.disabled = true;
    const refused = await keygateToken(configHome);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/This sign-in has ended/);
    expect(refused.stdout).toBe('');
    const gone = await waitFor(
      () =>
        calls(token2).then(
          () => null,
          (err: { status?: number; error?: any }) => err,
        ),
      { timeout: 5_000, what: 'the token refused' },
    );
    expect(gone.status).toBe(401);
    expect(gone.error?.error?.type).toBe('authentication_error');
    // Refused well within the token's life.
    expect(Date.now()).toBeLessThan(expiresAt - 60_000);
    const [after] = await sql`select status from members where id = ${member!.id}`;
    expect(after!.status).toBe('removed');
    const audit =
      await sql`select action, details from audit_log where account_id = ${account.id} and action = 'member.deprovisioned'`;
    expect(audit.map((a) => a.details.reason)).toEqual(['provider refused: invalid_grant']);
    // The sign-in was forgotten on the laptop.
    expect(readFileSync(join(dir, 'credentials.json'), 'utf8')).not.toContain('kgr_');

    // Claude Code itself, given that unexpired token, is refused by the gateway (it retries a 401
    // for minutes, so the test watches the gateway's refusals and then stops it).
    writeFileSync(
      join(home, '.claude/settings.json'),
      JSON.stringify({
        env: { ANTHROPIC_BASE_URL: stack.gateway.url, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
        apiKeyHelper: `echo ${token2}`,
      }),
    );
    const ledger = stack.emulator.ledger.entries.length;
    const mark = stack.logs.length;
    const refusedRun = runClaude({
      home,
      prompt: 'Say hello',
      sessionId: randomUUID(),
      env: {},
      blackholePort,
      timeoutMs: 90_000,
    });
    await waitFor(
      () =>
        stack.logs
          .slice(mark)
          .map((l) => JSON.parse(l))
          .find((l) => l.msg === 'access' && l.path === '/v1/messages' && l.status === 401),
      { timeout: 60_000, what: "Claude Code's call refused with 401" },
    );
    killClaudeRuns();
    const ended = await refusedRun;
    expect(ended.stdout).not.toMatch(/Emulated reply to: /);
    expect(stack.emulator.ledger.entries.length).toBe(ledger);
    expect(Date.now()).toBeLessThan(expiresAt);
  });

  it('a person outside the allowed domains is not provisioned', { timeout: 60_000 }, async () => {
    expect((await connect()).status).toBe(200);
    const configHome = join(root, 'mallory');
    mkdirSync(configHome, { recursive: true });
    const run = await keygateToken(configHome, (url) => approveDevice(url, 'mallory'));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('mallory@elsewhere.test is not in this account');
    const rows = await stack.gateway.store.db
      .sql`select 1 from members where email = 'mallory@elsewhere.test'`;
    expect(rows.length).toBe(0);
  });

  it('a refresh token Keygate never issued gets a 401 in the provider shape; a bad body a 400', async () => {
    const post = (body: unknown) =>
      fetch(`${stack.gateway.url}/idp/v1/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const res = await post({ refresh_token: 'kgr_nope' });
    expect(res.status).toBe(401);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(((await res.json()) as any).error.type).toBe('authentication_error');
    const bad = await post({ token: 1 });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.type).toBe('invalid_request_error');
    // A client guessing refresh tokens is cut off: 30 refusals a minute, then 429 without a lookup.
    // (Other tests of this file refused a refresh or two from this address too.)
    let cut = res;
    let refused = 1;
    while (cut.status === 401 && refused <= 31) {
      cut = await post({ refresh_token: `kgr_guess${refused}` });
      if (cut.status === 401) refused++;
    }
    expect(cut.status).toBe(429);
    expect(refused).toBeLessThanOrEqual(30);
    expect(refused).toBeGreaterThanOrEqual(27);
    expect(cut.headers.get('retry-after')).toMatch(/^\d+$/);
    // Past its budget, a client is refused before its body is read: a bad body is a 429 too.
    expect((await post({ token: 1 })).status).toBe(429);
    const none = await fetch(`${stack.gateway.url}/idp/v1/device/code`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ account_id: stack.account.id }),
    });
    expect(none.status).toBe(404);
    expect(((await none.json()) as any).error.message).toMatch(/has not connected an identity provider/);
  });
});
