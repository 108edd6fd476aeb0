import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from './claude-code';
import { baseFor, heldSignIn, prepareAccount, prepareHome, signIn, startClaude } from './claude-gateway';
import { useIdpStack } from './idp-fixture';
import type { Terminal } from './kit/terminal';
import { waitFor } from './kit/wait';

// Claude Code refreshes a gateway token that has less than 5 minutes left before each request
// (its l8i = 300000, Claude Code 2.1.330): a 4-minute token is refreshed inside the session.
const ctx = useIdpStack({ KEYGATE_MEMBER_TOKEN_TTL_MS: '240000' });
let blackholePort: number;
let term: Terminal | null = null;

beforeAll(async () => {
  blackholePort = await closedPort();
  await prepareAccount(ctx, { KEYGATE_TEAM: 'platform', OTEL_LOGS_EXPORT_INTERVAL: '500' });
});
afterEach(() => term?.close());

const sql = () => ctx.stack.gateway.store.db.sql;

/** The statuses the gateway answered on one path under the account's base, in order. */
const answered = (path: string) =>
  ctx.stack.logs
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg === 'access' && l.path === `/claude/${ctx.account.id}${path}`)
    .map((l) => l.status as number);

/** The account's calls, once the call log holds them. */
async function calls(): Promise<Record<string, any>[]> {
  await ctx.stack.gateway.writer.flush();
  return sql()`select * from calls where account_id = ${ctx.account.id} and endpoint = 'messages' order by created_at, id`;
}

/**
 * Waits until the refresh token Claude Code keeps is the one Keygate issued last (its hash, as
 * identity/tokens.ts keeps it): a session ended mid-refresh would keep a spent one, and
 * presenting it again ends the sign-in (reuse detection), so a test stops Claude Code only then.
 */
async function settled(home: string): Promise<void> {
  await waitFor(
    async () => {
      const held = heldSignIn(home)?.idpRefreshToken;
      if (!held) return false;
      const hash = createHash('sha256').update('keygate-idp-refresh\0').update(held).digest();
      return (
        (await sql()`select 1 from idp_sessions where refresh_hash = ${hash} and ended_at is null`).length > 0
      );
    },
    { timeout: 30_000, what: 'Claude Code to keep the latest refresh token' },
  );
}

/**
 * Types a prompt, sends it (again, if the key was taken while a notice held the input), waits for
 * the emulator's answer on screen, and returns the prompt's own call (Opus; Claude Code's side
 * calls, such as titles, use Haiku).
 */
async function prompt(t: Terminal, text: string): Promise<Record<string, any>> {
  const before = (await calls()).length;
  await t.waitFor(/^❯\s*$/m);
  t.type(text);
  // The input line's space after ❯ is a no-break space.
  await t.waitFor(new RegExp(`^❯\\s${text}`, 'm'));
  let sent = 0;
  await waitFor(
    () => {
      const s = t.screen();
      if (s.includes(`Emulated reply to: ${text}`)) return true;
      const input =
        s
          .split('\n')
          .filter((l) => l.startsWith('❯'))
          .at(-1) ?? '';
      if (
        input.includes(text) &&
        Date.now() - sent > 2_000 &&
        !/Thinking|…/.test(s.split(input).at(-1) ?? '')
      ) {
        sent = Date.now();
        t.keys('Enter');
      }
      return false;
    },
    { timeout: 60_000, interval: 200, what: `the answer to '${text}'` },
  ).catch((err: Error) => {
    throw new Error(`${err.message}; the screen shows:\n${t.screen()}`);
  });
  return waitFor(async () => (await calls()).slice(before).find((c) => /^claude-opus/.test(c.model)), {
    timeout: 30_000,
    what: `the call for '${text}'`,
  });
}

describe("Claude Code's /login to Keygate as its gateway (real Claude Code 2.1.330 in a pseudo-terminal)", () => {
  it('signs in through the account IdP, calls as the member under its group policy with the pushed settings, refreshes, signs in again, and is signed out when deprovisioned', {
    timeout: 300_000,
  }, async () => {
    const home = join(ctx.root, 'claude-home');
    const base = baseFor(ctx);
    prepareHome(home, base);
    const started = startClaude(home, blackholePort);
    const t = (term = started.term);
    const approve = (url: string) => ctx.approveDevice(url, 'alice');

    // /login: discovery at {base}, the device flow through the account's IdP, a member token.
    const approval = await signIn(t, home, started.pages, approve, true);
    expect(started.pages()[0]).toMatch(new RegExp(`^${ctx.idp.issuer}/device`));
    expect(answered('/.well-known/oauth-authorization-server')).toEqual([200]);
    expect(answered('/oauth/device_authorization')).toEqual([200]);
    // The managed settings are pushed, and Claude Code asks the person to approve their env:
    // the telemetry endpoint at {base} and the admin's variable.
    expect(approval).toContain(`OTEL_EXPORTER_OTLP_ENDPOINT=${base}`);
    expect(approval).toContain('KEYGATE_TEAM');
    await t.waitFor(/Cloud gateway/);
    expect(answered('/managed/settings')).toContain(200);

    const [alice] =
      await sql()`select id from members where account_id = ${ctx.account.id} and email = 'alice@acme.test'`;
    const keys =
      await sql()`select id, app, expires_at from api_keys where member_id = ${alice!.id} and created_by = 'idp'`;
    expect(keys).toHaveLength(1);

    // A prompt goes through the gateway's own pipeline, attributed to the member and the token's key.
    const first = await prompt(t, 'say hi');
    expect(first).toMatchObject({ member_id: alice!.id, key_id: keys[0]!.id, status: 200 });
    expect((await calls()).every((c) => /^claude-(opus|haiku)-/.test(c.model))).toBe(true);
    // The token Claude Code holds is under the member's group policy: Sonnet is not offered and refused.
    const held = heldSignIn(home)!;
    expect(held.url).toBe(base);
    const settings = await fetch(`${base}/managed/settings`, {
      headers: { authorization: `Bearer ${held.jwt}` },
    });
    expect(((await settings.json()) as any).settings.availableModels).toEqual([
      'claude-haiku',
      'claude-opus',
    ]);
    const sonnet = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${held.jwt}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(sonnet.status).toBe(400);
    expect(((await sonnet.json()) as any).error.message).toMatch(/group 'Engineering'/);

    // Refresh inside the session: the token has under 5 minutes left, so Claude Code renews it
    // (a rotated kgr_ refresh token) before the next call, which stays the member's.
    const refreshesBefore = answered('/oauth/token').length;
    const second = await prompt(t, 'say hi again');
    expect(second).toMatchObject({ member_id: alice!.id, key_id: keys[0]!.id, status: 200 });
    expect(answered('/oauth/token').length).toBeGreaterThan(refreshesBefore);
    expect(heldSignIn(home)!.jwt).not.toBe(held.jwt);
    expect(heldSignIn(home)!.idpRefreshToken).not.toBe(held.idpRefreshToken);

    // Stopped without its exit handlers (which may start one more refresh and die before keeping
    // the answer), once it keeps the latest refresh token.
    await settled(home);
    t.crash();
    await t.waitFor(/\[exited/);
    t.close();
    // Claude Code 2.1.330 started with a token under 5 minutes from its end may refresh it twice
    // at once, and the second, a spent refresh token, ends the sign-in (reuse detection): the
    // test lets the next session start as after a refresh, which the server's token still is.
    const credentials = join(home, '.claude/.credentials.json');
    const kept = JSON.parse(readFileSync(credentials, 'utf8'));
    kept.enterpriseGateway.expiresAt = Date.now() + 600_000;
    writeFileSync(credentials, JSON.stringify(kept));

    // The next session starts signed in, with the pushed settings in force from its start: its
    // telemetry reaches Keygate's receiver ({base}/v1/logs, the member token as bearer),
    // attributed to the member, sooner than by default (the admin's OTEL_LOGS_EXPORT_INTERVAL).
    const again = startClaude(home, blackholePort);
    const t2 = (term = again.term);
    await t2.waitFor(/Cloud gateway/);
    await prompt(t2, 'hello');
    await waitFor(
      async () =>
        (
          await sql()`select 1 from claude_code_events where account_id = ${ctx.account.id} and member_id = ${alice!.id} and key_id = ${keys[0]!.id}`
        ).length > 0,
      { timeout: 60_000, what: 'telemetry from the signed-in Claude Code' },
    );
    expect(answered('/v1/logs')).toContain(200);

    // /login again in the running session: a new sign-in (a new member token and key), no restart.
    await signIn(t2, home, again.pages, approve);
    const third = await prompt(t2, 'one more');
    const keysNow =
      await sql()`select id from api_keys where member_id = ${alice!.id} and created_by = 'idp' order by created_at`;
    expect(keysNow).toHaveLength(2);
    expect(third).toMatchObject({ member_id: alice!.id, key_id: keysNow[1]!.id, status: 200 });

    // Disabled at the IdP: the next refresh is refused (401 invalid_grant) and Claude Code is signed out.
    ctx.idp.people.get('alice')!.disabled = true;
    t2.type('are you there');
    t2.keys('Enter');
    await waitFor(() => answered('/oauth/token').at(-1) === 401, {
      timeout: 60_000,
      what: 'the refused refresh',
    });
    const [ended] =
      await sql()`select 1 from audit_log where account_id = ${ctx.account.id} and action = 'member.deprovisioned' and target_id = ${alice!.id}`;
    expect(ended).toBeDefined();
    // Claude Code says so (the refused refresh, or the member's token refused on the call it makes
    // with the token it still holds), and no call of the removed member reaches the provider. Its
    // call and its refresh race: the prompt above may have been answered with the token it held
    // before the refresh was refused, so one more prompt is its first call after the removal.
    const callsBefore = (await calls()).length;
    t2.type('still there');
    t2.keys('Enter');
    await t2.waitFor(
      /Cloud gateway session expired — run \/login to reconnect|This key's member was removed from the account/,
    );
    expect((await calls()).slice(callsBefore).filter((c) => c.status === 200)).toEqual([]);
    const [member] = await sql()`select status from members where id = ${alice!.id}`;
    expect(member!.status).toBe('removed');
  });
});
