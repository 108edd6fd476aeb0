import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { accessibilityProblems, launchBrowser, screenshot, signIn, tableText } from './dashboard-browser';
import { seedDashboard, type DashboardFixture } from './dashboard-seed';
import { api, callModel, startStack, type Stack } from './harness';

// A real browser and axe on a shared 2-core machine: each step may take a while.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

let stack: Stack;
let f: DashboardFixture;
let browser: Browser;
let base: string;

beforeAll(async () => {
  stack = await startStack();
  base = stack.gateway.url;
  f = await seedDashboard(stack);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

async function freshPage(viewport = { width: 1280, height: 900 }): Promise<Page> {
  return (await browser.newContext({ viewport })).newPage();
}

describe('dashboard, signed in as a member', () => {
  it("sees only their own usage, keys and calls; another member's pages answer 404", async () => {
    const page = await freshPage();
    await signIn(page, base, f.aliceKey.secret);
    expect(new URL(page.url()).pathname).toBe('/dashboard');
    await page.goto(`${base}/dashboard?period=30d`);
    await screenshot(page, '20-member-overview');
    expect(await accessibilityProblems(page)).toEqual([]);
    const own = (
      await api(
        base,
        `/v1/organizations/usage_summary?by=member&starting_at=${new Date(Date.now() - 40 * 86_400_000).toISOString()}`,
        { key: f.acct.adminKey },
      )
    ).body.data.find((r: any) => r.user_id === f.alice.id);
    const totals = await tableText(page, 'totals');
    expect(Number(totals[1]![8]!.replaceAll(',', ''))).toBe(own.requests);
    expect(Number(totals[1]![5]!.replaceAll(',', ''))).toBe(own.output_tokens);
    expect((await tableText(page, 'by-split')).slice(1).map((r) => r[0])).toEqual(['alice laptop']);
    expect(await page.getByRole('navigation', { name: 'Dashboard' }).textContent()).not.toContain('Members');

    await page.goto(`${base}/dashboard/keys?period=30d`);
    expect((await tableText(page, 'keys')).slice(1).map((r) => r[0])).toEqual(['alice laptop']);
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    await page.goto(`${base}/dashboard/calls?period=30d&member=${f.bob.id}`);
    const calls = (await tableText(page, 'calls')).slice(1);
    expect(calls.length).toBe(5 + 2);
    expect(new Set(calls.map((r) => r[2]))).toEqual(new Set(['alice laptop']));
    await page.goto(`${base}/dashboard/members/${f.alice.id}?period=30d`);
    expect(await page.locator('h1').textContent()).toBe('Member: Alice');

    for (const path of [
      `/dashboard/members/${f.bob.id}`,
      `/dashboard/keys/${f.bobKey.id}`,
      `/dashboard/keys/${f.appKey.id}`,
      '/dashboard/groups/ci-run-7',
    ]) {
      const res = await page.goto(base + path);
      expect(res?.status(), path).toBe(404);
      expect(await page.locator('main').textContent()).not.toContain('bob');
    }
    await screenshot(page, '21-member-404');
    const csrf = await page
      .goto(`${base}/dashboard/keys`)
      .then(() => page.locator('input[name=_csrf]').first().getAttribute('value'));
    const cookie = (await page.context().cookies()).find((c) => c.name === 'kg_session')!;
    const revoke = await fetch(`${base}/dashboard/keys/${f.bobKey.id}/revoke`, {
      method: 'POST',
      headers: {
        cookie: `kg_session=${cookie.value}`,
        'content-type': 'application/x-www-form-urlencoded',
        origin: base,
      },
      body: `_csrf=${csrf}`,
    });
    expect(revoke.status).toBe(403);
  });

  it('creates and revokes their own keys when the account allows it, and only their own', async () => {
    const allow = (on: boolean) =>
      api(base, '/v1/organizations/me', { key: f.acct.adminKey, body: { members_manage_own_keys: on } });
    expect((await allow(true)).body.members_manage_own_keys).toBe(true);
    const page = await freshPage();
    await signIn(page, base, f.aliceKey.secret);
    await page.goto(`${base}/dashboard/keys`);
    await page.getByText('Create a key').click();
    expect(await page.getByLabel('Member').count()).toBe(0);
    await page.getByLabel('Name').fill('alice second laptop');
    await page.getByRole('button', { name: 'Create key' }).click();
    await screenshot(page, '26-member-key-created');
    expect(await accessibilityProblems(page)).toEqual([]);
    const secret = (await page.locator('#new-secret').textContent())!;
    expect((await callModel(base, secret)).status).toBe(200);
    const made = (
      await api(base, '/v1/organizations/api_keys?limit=100', { key: f.acct.adminKey })
    ).body.data.find((k: any) => k.name === 'alice second laptop');
    expect(made).toMatchObject({ status: 'active' });
    const [{ member_id }] = (await stack.gateway.store.db
      .sql`select member_id from api_keys where id = ${made.id}`) as unknown as [{ member_id: string }];
    expect(member_id).toBe(f.alice.id);

    await page.getByRole('link', { name: 'alice second laptop' }).first().click();
    expect(await page.getByRole('button', { name: 'Rotate' }).count()).toBe(0);
    await screenshot(page, '27-member-own-key');
    await page.getByRole('button', { name: 'Revoke' }).click();
    expect((await callModel(base, secret)).status).toBe(401);

    // Another member's key stays out of reach, forms or not; with the setting off, no key can be made.
    const csrf = await page
      .goto(`${base}/dashboard/keys`)
      .then(() => page.locator('input[name=_csrf]').first().getAttribute('value'));
    const cookie = (await page.context().cookies()).find((c) => c.name === 'kg_session')!;
    const post = (path: string, body: string) =>
      fetch(base + path, {
        method: 'POST',
        headers: {
          cookie: `kg_session=${cookie.value}`,
          'content-type': 'application/x-www-form-urlencoded',
          origin: base,
        },
        body: `_csrf=${csrf}&${body}`,
        redirect: 'manual',
      });
    expect((await post(`/dashboard/keys/${f.bobKey.id}/revoke`, '')).status).toBe(404);
    expect((await post(`/dashboard/keys/${f.aliceKey.id}/rotate`, 'grace_period_seconds=0')).status).toBe(
      403,
    );
    const forBob = await post('/dashboard/keys', `name=sneaky&kind=live&member_id=${f.bob.id}`);
    expect(forBob.status).toBe(201);
    const [sneaky] = await stack.gateway.store.db.sql`select member_id from api_keys where name = 'sneaky'`;
    expect(sneaky!.member_id).toBe(f.alice.id);
    await allow(false);
    expect((await post('/dashboard/keys', 'name=later&kind=live')).status).toBe(403);
    expect((await callModel(base, f.bobKey.secret)).status).toBe(200);
  });

  it('works at phone width', async () => {
    const page = await freshPage({ width: 390, height: 844 });
    await signIn(page, base, f.acct.adminKey);
    await page.goto(`${base}/dashboard?period=30d`);
    await screenshot(page, '22-phone-overview');
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await page.goto(`${base}/dashboard/calls?period=30d`);
    await screenshot(page, '23-phone-calls');
    expect(
      await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth'),
    ).toBeLessThanOrEqual(0);
  });
});

describe('dashboard sign-in', () => {
  it('the operator token opens the cross-account view', async () => {
    const page = await freshPage();
    await signIn(page, base, stack.config.operatorToken!);
    await page.goto(`${base}/dashboard?period=30d`);
    expect(await page.locator('h1').textContent()).toBe('Accounts (operator)');
    await screenshot(page, '24-operator');
    expect(await accessibilityProblems(page)).toEqual([]);
    const usage = await tableText(page, 'usage-by-account');
    expect(usage.slice(1).map((r) => r[0])).toContain('Dashboard Co');
    expect((await tableText(page, 'plans')).slice(1).map((r) => r[0])).toEqual(['Solo', 'Team', 'Scale']);
  });

  it("the operator opens one account's pages read-only from the cross-account view", async () => {
    const page = await freshPage();
    await signIn(page, base, stack.config.operatorToken!);
    await page.goto(`${base}/dashboard?period=30d`);
    await page.getByRole('link', { name: 'Dashboard Co' }).first().click();
    expect(new URL(page.url()).searchParams.get('account')).toBe(f.acct.id);
    expect(await page.locator('h1').textContent()).toBe('Overview');
    expect(await page.locator('header').textContent()).toContain('Operator (read-only) · Dashboard Co');
    await screenshot(page, '28-operator-account');
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Keys' }).click();
    expect(new URL(page.url()).searchParams.get('account')).toBe(f.acct.id);
    expect((await tableText(page, 'keys')).slice(1).map((r) => r[0])).toEqual(
      expect.arrayContaining(['alice laptop', 'bob ci', 'web app']),
    );
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    await page.goto(`${base}/dashboard/keys/${f.bobKey.id}?account=${f.acct.id}`);
    expect(await page.getByRole('button', { name: 'Revoke' }).count()).toBe(0);
    const csrf = await page.locator('input[name=_csrf]').first().getAttribute('value');
    const cookie = (await page.context().cookies()).find((c) => c.name === 'kg_session')!;
    const revoke = await fetch(`${base}/dashboard/keys/${f.bobKey.id}/revoke?account=${f.acct.id}`, {
      method: 'POST',
      headers: {
        cookie: `kg_session=${cookie.value}`,
        'content-type': 'application/x-www-form-urlencoded',
        origin: base,
      },
      body: `_csrf=${csrf}`,
    });
    expect(revoke.status).toBe(403);
    await page.getByRole('link', { name: 'All accounts' }).click();
    expect(await page.locator('h1').textContent()).toBe('Accounts (operator)');
  });

  it('refuses an app key of no member, and rate-limits failed attempts per key prefix', async () => {
    const page = await freshPage();
    await signIn(page, base, f.appKey.secret);
    expect(new URL(page.url()).pathname).toBe('/dashboard/sign-in');
    expect(await page.getByRole('alert').textContent()).toContain('not a member');
    await screenshot(page, '25-sign-in-refused');
    const guess = `${f.acct.adminKey.slice(0, 20)}${'x'.repeat(f.acct.adminKey.length - 20)}`;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      await signIn(page, base, guess);
      statuses.push((await page.getByRole('alert').textContent())!.startsWith('Too many') ? 429 : 401);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
  });
});
