import type { Browser } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliFor } from './cli-runner';
import { accessibilityProblems, signIn } from './dashboard-browser';
import type { SeededAccount, Stack } from './harness';
import { useIdpStack } from './idp-fixture';
import type { TestIdp } from './oidc-provider';

const ctx = useIdpStack();
const connect = ctx.connect;
let stack: Stack;
let idp: TestIdp;
let account: SeededAccount;
let browser: Browser;

beforeAll(() => {
  ({ stack, idp, account, browser } = ctx);
});

describe('"Sign in with <provider>" on the dashboard, in a real browser', () => {
  const signInAt = ctx.dashboardSignIn;

  it('provisions a member of a listed group on first sign-in and opens a session for them', {
    timeout: 60_000,
  }, async () => {
    expect((await connect({ provision: 'group', provision_groups: ['claude-users'] })).status).toBe(200);
    const { context, page } = await signInAt('carol');
    try {
      await page.waitForURL(`${stack.gateway.url}/dashboard`);
      expect(await page.locator('body').textContent()).toContain('carol@acme.test');
      const sql = stack.gateway.store.db.sql;
      const [member] = await sql`
        select id, role, status, idp_groups from members where account_id = ${account.id} and email = 'carol@acme.test'`;
      expect(member).toMatchObject({ role: 'developer', status: 'active', idp_groups: ['claude-users'] });
      const sessions =
        await sql`select kind, member_id from dashboard_sessions where member_id = ${member!.id}`;
      expect(sessions.map((r) => r.kind)).toEqual(['member']);
      // The pending sign-in cookie is gone; the session cookie is HttpOnly and Strict.
      const cookies = await context.cookies();
      expect(cookies.find((c) => c.name === 'kg_idp')).toBeUndefined();
      expect(cookies.find((c) => c.name === 'kg_session')).toMatchObject({
        httpOnly: true,
        sameSite: 'Strict',
      });

      // Deprovisioned (here by the provider refusing a device refresh, or SCIM): the session ends.
      await stack.gateway.store.identity.deprovision(account.id, member!.id, {
        actor: 'test',
        action: 'member.deprovisioned',
        targetId: member!.id,
      });
      await page.goto(`${stack.gateway.url}/dashboard`);
      expect(page.url()).toBe(`${stack.gateway.url}/dashboard/sign-in`);
    } finally {
      await context.close();
    }
  });

  it('a person invited by email signs in as the member of that invite, in its groups', {
    timeout: 60_000,
  }, async () => {
    expect((await connect({ provision: 'domain' })).status).toBe(200);
    const admin = (path: string, body: unknown) =>
      fetch(`${stack.gateway.url}/v1/organizations${path}`, {
        method: 'POST',
        headers: { 'x-api-key': account.adminKey, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, any> }));
    const group = await admin('/rbac_groups', { name: 'invited-sso' });
    expect(group.status).toBe(200);
    const invite = await admin('/invites', {
      email: 'ivy@acme.test',
      role: 'user',
      rbac_group_ids: [group.body.id],
    });
    expect(invite.status).toBe(200);
    const { context, page } = await signInAt('ivy');
    try {
      await page.waitForURL(`${stack.gateway.url}/dashboard`);
      const sql = stack.gateway.store.db.sql;
      const [member] =
        await sql`select id from members where account_id = ${account.id} and email = 'ivy@acme.test'`;
      const [accepted] = await sql`select status, member_id from invites where id = ${invite.body.id}`;
      expect(accepted).toMatchObject({ member_id: member!.id });
      expect(accepted!.status).not.toBe('pending');
      const groups = await sql`select group_id from rbac_group_members where member_id = ${member!.id}`;
      expect(groups.map((g) => g.group_id)).toEqual([group.body.id]);
    } finally {
      await context.close();
    }
  });

  it('refuses a person in none of the provisioned groups, and adds no member', {
    timeout: 60_000,
  }, async () => {
    expect((await connect({ provision: 'group', provision_groups: ['claude-users'] })).status).toBe(200);
    const { context, page } = await signInAt('dave');
    try {
      expect(await page.getByRole('alert').textContent()).toContain(
        'dave@acme.test is in none of the groups this account provisions (claude-users)',
      );
      const rows = await stack.gateway.store.db.sql`select 1 from members where email = 'dave@acme.test'`;
      expect(rows.length).toBe(0);
    } finally {
      await context.close();
    }
  });

  it('the same person signs in as the same member after their email changed at the provider', {
    timeout: 60_000,
  }, async () => {
    expect((await connect()).status).toBe(200);
    const first = await signInAt('ivy');
    await first.page.waitForURL(`${stack.gateway.url}/dashboard`);
    await first.context.close();
    idp.people.get('ivy')!.email = 'ivy.renamed@acme.test';
    const again = await signInAt('ivy');
    await again.page.waitForURL(`${stack.gateway.url}/dashboard`);
    await again.context.close();
    const rows = await stack.gateway.store.db.sql`
      select email from members where account_id = ${account.id} and idp_subject = 'ivy'`;
    expect(rows.map((r) => r.email)).toEqual(['ivy@acme.test']);
  });

  it('a return from the provider that this browser did not start is refused (login CSRF)', async () => {
    const res = await fetch(`${stack.gateway.url}/dashboard/sign-in/idp/callback?code=abc&state=xyz`);
    expect(res.status).toBe(401);
    expect(await res.text()).toContain('was not started from this browser');
    const none = await fetch(`${stack.gateway.url}/dashboard/sign-in/idp?account=${stack.account.id}`, {
      redirect: 'manual',
    });
    expect(none.status).toBe(404);
    const page = await fetch(`${stack.gateway.url}/dashboard/sign-in?account=${stack.account.id}`);
    expect(page.status).toBe(404);
    expect(await page.text()).toContain('That account has not connected a company identity provider.');
  });
});

describe('connecting the identity provider from the CLI and the dashboard', () => {
  it('`keygate idp set` takes the secret from stdin, never the command line, connects (the issuer discovered first), and `idp show` prints it without the secret', {
    timeout: 60_000,
  }, async () => {
    const other = await stack.seedAccount();
    const cli = cliFor(stack);
    const env = { KEYGATE_EGRESS_ALLOW: '127.0.0.1' };
    const args = ['--account', other.id, '--name', 'Acme SSO', '--client-id', idp.clientId];
    // A secret on the command line is refused (ps and shell history show it), before anything is sent.
    const onLine = await cli(['idp', 'set', ...args, '--issuer', idp.issuer, '--client-secret', 'x'], env);
    expect(onLine.code).toBe(2);
    expect(onLine.stderr).toContain('--client-secret is refused');
    expect(onLine.stderr).toContain('--client-secret-stdin');
    const blocked = await cli(['idp', 'set', ...args, '--issuer', idp.issuer], {
      KEYGATE_IDP_CLIENT_SECRET: 'x',
    });
    expect(blocked.code).toBe(2);
    expect(blocked.stderr).toContain('issuer: blocked by the egress policy');
    const set = await cli(
      [
        'idp',
        'set',
        ...args,
        '--issuer',
        idp.issuer,
        '--client-secret-stdin',
        '--json',
        '--domain',
        'acme.test',
        '--provision',
        'group',
        '--provision-group',
        'eng',
        '--provision-group',
        'claude-users',
      ],
      env,
      `${idp.clientSecret}\n`,
    );
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({
      issuer: idp.issuer,
      allowed_domains: ['acme.test'],
      provision: 'group',
      provision_groups: ['eng', 'claude-users'],
    });
    // The secret read from stdin is the one stored (without the newline).
    const stored = await stack.gateway.store.identity.provider(other.id);
    expect(
      stack.deps.box.open(stored!.clientSecretSealed, { purpose: 'idp-client-secret', row: other.id }),
    ).toBe(idp.clientSecret);
    const shown = await cli(['idp', 'show', '--account', other.id], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('by group: eng, claude-users');
    expect(shown.stdout).not.toContain(idp.clientSecret);
    expect((await cli(['idp', 'remove', '--account', other.id], env)).code).toBe(0);
    expect((await cli(['idp', 'show', '--account', other.id], env)).code).toBe(4);
  });

  it('an admin connects it on the settings page, the issuer checked first', { timeout: 60_000 }, async () => {
    const other = await stack.seedAccount();
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await signIn(page, stack.gateway.url, other.adminKey);
      await page.goto(`${stack.gateway.url}/dashboard/settings`);
      await page.getByRole('link', { name: /Company sign-in/ }).click();
      expect(await accessibilityProblems(page)).toEqual([]);
      const fill = async (issuer: string) => {
        await page.getByLabel('Name on the sign-in button').fill('Acme SSO');
        await page.getByLabel('Issuer URL').fill(issuer);
        await page.getByLabel('Client id').fill(idp.clientId);
        await page.getByLabel(/Client secret/).fill(idp.clientSecret);
        await page.getByLabel(/Allowed email domains/).fill('acme.test, acme.example');
        await page.getByRole('button', { name: 'Save and check the issuer' }).click();
      };
      await fill(`${stack.gateway.url}/not-an-issuer`);
      expect(await page.getByRole('alert').textContent()).toContain('OpenID Connect discovery failed');
      await fill(idp.issuer);
      expect(await page.getByRole('status').textContent()).toContain('Identity provider saved');
      const saved = await stack.gateway.store.identity.provider(other.id);
      expect(saved).toMatchObject({ issuer: idp.issuer, allowedDomains: ['acme.test', 'acme.example'] });
      expect(await accessibilityProblems(page)).toEqual([]);
      // Another issuer with the secret left empty: refused, the stored secret never goes there.
      await page.getByLabel('Issuer URL').fill(`${idp.issuer}/elsewhere`);
      await page.getByRole('button', { name: 'Save and check the issuer' }).click();
      expect(await page.getByRole('alert').textContent()).toContain(
        'client_secret: required again when the issuer changes',
      );
      expect((await stack.gateway.store.identity.provider(other.id))!.issuer).toBe(idp.issuer);
      // The sign-in page now offers the button for this account, and the account-id form otherwise.
      const stranger = await browser.newContext();
      const anonymous = await stranger.newPage();
      await anonymous.goto(`${stack.gateway.url}/dashboard/sign-in?account=${other.id}`);
      await anonymous.getByRole('link', { name: 'Sign in with Acme SSO' }).waitFor();
      expect(await accessibilityProblems(anonymous)).toEqual([]);
      await anonymous.goto(`${stack.gateway.url}/dashboard/sign-in`);
      await anonymous.getByLabel(/your Keygate account id/).fill(other.id);
      await anonymous.getByRole('button', { name: 'Continue with company sign-in' }).click();
      await anonymous.getByRole('link', { name: 'Sign in with Acme SSO' }).click();
      await anonymous.locator('input[name=login]').waitFor();
      expect(new URL(anonymous.url()).origin).toBe(idp.issuer);
      await anonymous.goto(`${stack.gateway.url}/dashboard/sign-in`);
      expect(await accessibilityProblems(anonymous)).toEqual([]);
      await stranger.close();
    } finally {
      await context.close();
    }
  });
});
