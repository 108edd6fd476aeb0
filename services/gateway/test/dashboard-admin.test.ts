import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  accessibilityProblems,
  launchBrowser,
  parseCsv,
  screenshot,
  signIn,
  tableText,
} from './dashboard-browser';
import { seedDashboard, type DashboardFixture } from './dashboard-seed';
import { readFile } from 'node:fs/promises';
import { api, callAt, callModel, startStack, type Stack } from './harness';

// A real browser and axe on a shared 2-core machine: each step may take a while.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

let stack: Stack;
let f: DashboardFixture;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let base: string;

const DAY = 86_400_000;
const num = (s: string) => Number(s.replaceAll(',', ''));

beforeAll(async () => {
  stack = await startStack();
  base = stack.gateway.url;
  f = await seedDashboard(stack);
  browser = await launchBrowser();
  context = await browser.newContext({ acceptDownloads: true });
  page = await context.newPage();
});
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

/** Visits a page, saves its screenshot and asserts axe finds nothing serious. */
async function visit(path: string, shot: string): Promise<void> {
  const res = await page.goto(base + path);
  expect(res?.status(), path).toBe(200);
  await screenshot(page, shot);
  expect(await accessibilityProblems(page), path).toEqual([]);
}

describe('dashboard, signed in as an account admin', () => {
  it('signs in with an admin key into a server-side session cookie (HttpOnly, SameSite=Strict)', async () => {
    await page.goto(`${base}/dashboard`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/sign-in');
    await screenshot(page, '00-sign-in');
    expect(await accessibilityProblems(page)).toEqual([]);
    await signIn(page, base, f.acct.adminKey);
    expect(new URL(page.url()).pathname).toBe('/dashboard');
    await expect(page.locator('h1').textContent()).resolves.toBe('Overview');
    const [cookie] = (await context.cookies()).filter((c) => c.name === 'kg_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', secure: false, path: '/dashboard' });
    const [row] = await stack.gateway.store.db
      .sql`select kind, account_id, expires_at from dashboard_sessions where account_id = ${f.acct.id}`;
    expect(row).toMatchObject({ kind: 'admin', account_id: f.acct.id });
    expect(row!.expires_at.getTime()).toBeGreaterThan(Date.now());
  });

  it('shows the same totals as the account API for the same period (7 days, UTC days)', async () => {
    await visit('/dashboard', '01-overview');
    const today = Math.floor(Date.now() / DAY) * DAY;
    const q = `starting_at=${new Date(today - 6 * DAY).toISOString()}&ending_at=${new Date(today + DAY).toISOString()}`;
    const summary = (await api(base, `/v1/organizations/usage_summary?by=day&${q}`, { key: f.acct.adminKey }))
      .body;
    const sum = (pick: (r: any) => number) => summary.data.reduce((t: number, r: any) => t + pick(r), 0);
    const cost = (await api(base, `/v1/organizations/cost_report?${q}&limit=31`, { key: f.acct.adminKey }))
      .body;
    const items = cost.data.flatMap((b: any) => b.results);
    // Usage only, in USD: the plan's charge (EUR) is on the billing page, never summed with it.
    expect(new Set(items.map((i: any) => i.currency))).toEqual(new Set(['USD']));
    const cents = items.reduce((t: number, i: any) => t + Number(i.amount), 0);

    const [header, totals] = await tableText(page, 'totals');
    const cell = (label: string) => num(totals![header!.indexOf(label)]!);
    expect(cell('Requests')).toBe(sum((r) => r.requests));
    expect(cell('Errors')).toBe(sum((r) => r.errors));
    expect(cell('Uncached input')).toBe(sum((r) => r.uncached_input_tokens));
    expect(cell('Cache writes 5m')).toBe(sum((r) => r.cache_creation.ephemeral_5m_input_tokens));
    expect(cell('Cache writes 1h')).toBe(sum((r) => r.cache_creation.ephemeral_1h_input_tokens));
    expect(cell('Cache reads')).toBe(sum((r) => r.cache_read_input_tokens));
    expect(cell('Output')).toBe(sum((r) => r.output_tokens));
    expect(cell('Cost (USD)')).toBeCloseTo(cents / 100, 4);
    expect(cell('Cache writes 5m')).toBeGreaterThan(0);
    expect(cell('Cache writes 1h')).toBeGreaterThan(0);
    expect(cell('Errors')).toBe(2);
    expect(await page.locator('[data-total="requests"]').textContent()).toBe(
      totals![header!.indexOf('Requests')],
    );
    // The 12-day-old call is outside the 7 days; the per-day table has all seven days.
    expect((await tableText(page, 'by-day')).length).toBe(1 + 7 + 1);
    const errors = Object.fromEntries(
      (await tableText(page, 'errors')).slice(1).map((r) => [r[0], num(r[1]!)]),
    );
    expect(errors).toMatchObject({ 'Rate limit': 1, Overloaded: 1, 'Served after retries': 1 });
    expect(await page.locator('main').textContent()).toContain('free trial');
  });

  it('switches the period and the split; both stay in the URL from page to page', async () => {
    await page.getByRole('link', { name: '30 days', exact: true }).click();
    expect(new URL(page.url()).searchParams.get('period')).toBe('30d');
    expect((await tableText(page, 'by-day')).length).toBe(1 + 30 + 1);
    const requests30 = num((await tableText(page, 'totals'))[1]![8]!);
    // Requests count every call, errors included (migration 004): 10 today, 4 on earlier days.
    expect(requests30).toBe(10 + 4);
    await page.getByRole('link', { name: 'Model', exact: true }).click();
    const url = new URL(page.url());
    expect([url.searchParams.get('period'), url.searchParams.get('split')]).toEqual(['30d', 'model']);
    const models = (await tableText(page, 'by-split'))
      .slice(1, -1)
      .map((r) => r[0])
      .sort();
    expect(models).toEqual(['claude-haiku-4-5', 'claude-opus-4-5', 'claude-sonnet-4-5']);
    await screenshot(page, '02-overview-30d-by-model');
    await page.getByRole('link', { name: 'Today', exact: true }).click();
    expect(num((await tableText(page, 'totals'))[1]![8]!)).toBe(10);
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Members' }).click();
    expect(new URL(page.url()).searchParams.get('period')).toBe('today');
    expect(new URL(page.url()).searchParams.get('split')).toBe('model');
  });

  it('opens a member, a key and a group', async () => {
    await visit('/dashboard/members?period=30d', '03-members');
    // The members table and the prompt-caching table both name Alice: the first is the members table.
    await page.getByRole('link', { name: 'Alice', exact: true }).first().click();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/members/${f.alice.id}`);
    await screenshot(page, '04-member');
    expect(await accessibilityProblems(page)).toEqual([]);
    const perKey = await tableText(page, 'per-key');
    expect(perKey.slice(1).map((r) => r[0])).toEqual(['alice laptop']);
    expect(num(perKey[1]![8]!)).toBe(5 + 2);

    await page.getByRole('link', { name: 'alice laptop' }).first().click();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/keys/${f.aliceKey.id}`);
    await screenshot(page, '05-key');
    expect(await accessibilityProblems(page)).toEqual([]);

    await visit('/dashboard/groups?period=30d', '06-groups');
    const groups = await tableText(page, 'groups');
    expect(groups.slice(1).map((r) => r[0])).toEqual(
      expect.arrayContaining(['refactor-1', 'ci-run-7', 'batch-12']),
    );
    const col = (label: string) => groups[0]!.indexOf(label);
    const [rounds, retries, wasted] = await stack.gateway.store.db.sql`
      select count(*)::int as rounds, sum(retry_count)::int as retries,
             coalesce(sum(retry_count) filter (where status >= 400 or error_type is not null), 0)::int as wasted
      from calls where account_id = ${f.acct.id} and group_id = 'refactor-1'`.then(([r]) => [
      r!.rounds,
      r!.retries,
      r!.wasted,
    ]);
    const refactor = groups.find((r) => r[0] === 'refactor-1')!;
    expect([
      num(refactor[col('Round trips')]!),
      num(refactor[col('Retries')]!),
      num(refactor[col('Wasted retries')]!),
    ]).toEqual([rounds, retries, wasted]);
    expect(rounds).toBe(5);
    await page.getByRole('link', { name: 'refactor-1' }).click();
    await screenshot(page, '07-group');
    expect(await accessibilityProblems(page)).toEqual([]);
    const [head, ...calls] = await tableText(page, 'calls');
    expect(calls).toHaveLength(5);
    expect(calls.map((r) => r[0])).toEqual([...calls.map((r) => r[0])].sort());
    const [endpoint, status] = [head!.indexOf('Endpoint'), head!.indexOf('Status')];
    expect(calls.map((r) => [r[endpoint], r[status]])).toEqual([
      ['Messages', '200'],
      ['Messages', '200'],
      ['Messages', '200'],
      ['Messages', '429 rate_limit_error'],
      ['Messages', '200'],
    ]);
  });

  it('visits every other page: call log with filters and cursor pages, models, keys', async () => {
    await visit('/dashboard/calls?period=30d', '08-calls');
    expect((await tableText(page, 'calls')).length - 1).toBe(14);
    await page.getByLabel('Key').selectOption({ label: 'bob ci' });
    await page.getByRole('button', { name: 'Filter' }).click();
    const bobs = (await tableText(page, 'calls')).slice(1);
    expect(bobs.map((r) => r[2])).toEqual(['bob ci', 'bob ci', 'bob ci', 'bob ci']);
    expect(new URL(page.url()).searchParams.get('period')).toBe('30d');
    await page.goto(`${base}/dashboard/calls?period=30d&status=error`);
    const [head, ...errors] = await tableText(page, 'calls');
    expect(errors.map((r) => r[head!.indexOf('Status')])).toEqual([
      '529 overloaded_error',
      '429 rate_limit_error',
    ]);
    await visit('/dashboard/models?period=30d', '09-models');
    await visit('/dashboard/keys?period=30d', '10-keys');
  });

  it('exports exactly the table on screen as CSV: the link downloads a file', async () => {
    await page.goto(`${base}/dashboard?period=30d&split=key`);
    for (const id of ['by-day', 'by-split']) {
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.locator(`a.csv[href*="table=${id}"]`).click(),
      ]);
      expect(download.suggestedFilename()).toBe(`overview-${id}.csv`);
      const csv = parseCsv(await readFile((await download.path())!, 'utf8'));
      expect(csv).toEqual(await tableText(page, id));
      expect(csv.length).toBeGreaterThan(3);
    }
  });

  it("the call log's CSV is the whole filtered log, streamed from the database in batches, not only the page on screen", async () => {
    const at = new Date(Date.now() - 2 * DAY).toISOString();
    await stack.gateway.store.calls.insertBatch(
      Array.from({ length: 1100 }, (_, i) =>
        callAt(f.acct.id, at, {
          keyId: f.bobKey.id,
          memberId: f.bob.id,
          model: 'claude-haiku-4-5',
          latencyMs: i,
          usage: { input_tokens: i, output_tokens: 1 },
        }),
      ),
    );
    await page.goto(`${base}/dashboard/calls?period=30d&key=${f.bobKey.id}`);
    const onScreen = await tableText(page, 'calls');
    expect(onScreen.length - 1).toBe(50);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: /CSV of the whole filtered log/ }).click(),
    ]);
    const csv = parseCsv(await readFile((await download.path())!, 'utf8'));
    const [{ n }] = (await stack.gateway.store.db
      .sql`select count(*)::int as n from calls where key_id = ${f.bobKey.id}`) as unknown as [{ n: number }];
    expect(csv.length - 1).toBe(n);
    expect(n).toBe(1100 + 4);
    expect(csv.slice(0, 51)).toEqual(onScreen);
    expect(new Set(csv.slice(1).map((r) => r[2]))).toEqual(new Set(['bob ci']));
    await stack.gateway.store.db.sql`delete from calls where key_id = ${f.bobKey.id} and created_at = ${at}`;
    await stack.gateway.store.db
      .sql`delete from usage_hourly where key_id = ${f.bobKey.id} and hour = ${new Date(Math.floor(Date.parse(at) / 3_600_000) * 3_600_000)}`;
  });

  it('creates a key from the page (secret shown once), then revokes it: the proxy refuses it within a second', async () => {
    await page.goto(`${base}/dashboard/keys`);
    await page.getByText('Create a key').click();
    await page.getByLabel('Name').fill('made in the browser');
    await page.getByLabel(/Resumable streams/).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await screenshot(page, '11-key-created');
    const secret = (await page.locator('#new-secret').textContent())!;
    expect(secret).toMatch(/^kg_live_/);
    expect((await callModel(base, secret)).status).toBe(200);
    await page.getByRole('link', { name: 'made in the browser' }).first().click();
    // Created with resumable streams; turned off from its page.
    const resumable = page.locator('dl.facts div', { hasText: 'Resumable streams' }).locator('dd');
    expect(await resumable.textContent()).toBe('on');
    await page.getByRole('button', { name: 'Stop keeping streams' }).click();
    expect(await resumable.textContent()).toMatch(/^off/);
    await screenshot(page, '12-key-streams-off');
    const [stored] = await stack.gateway.store.db
      .sql`select resumable_streams from api_keys where name = 'made in the browser'`;
    expect(stored).toEqual({ resumable_streams: false });
    expect(await page.getByRole('button', { name: 'Make streams resumable' }).count()).toBe(1);
    await page.getByRole('button', { name: 'Revoke' }).click();
    const revokedAt = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - revokedAt < 1000) status = (await callModel(base, secret)).status;
    expect(status).toBe(401);
    expect(Date.now() - revokedAt).toBeLessThan(1000);
    expect(await page.locator('table#keys').textContent()).not.toContain('made in the browser');
  });

  it('refuses a form post without the CSRF token', async () => {
    const cookie = (await context.cookies()).find((c) => c.name === 'kg_session')!;
    const res = await fetch(`${base}/dashboard/keys`, {
      method: 'POST',
      headers: {
        cookie: `kg_session=${cookie.value}`,
        'content-type': 'application/x-www-form-urlencoded',
        origin: base,
      },
      body: 'name=forged&kind=live',
    });
    expect(res.status).toBe(403);
  });

  it('sets the reporting time zone on the settings page: every page names it, and days and totals follow the API in that zone', async () => {
    await visit('/dashboard/settings', '12-settings');
    await page.getByLabel(/Reporting time zone/).fill('Asia/Kolkata');
    await page.getByRole('button', { name: 'Save settings' }).click();
    expect(await page.locator('main').textContent()).toMatch(/\+5:30 from UTC/);
    await page.goto(`${base}/dashboard/settings`);
    await page.getByLabel(/Reporting time zone/).fill('America/New_York');
    await page.getByRole('button', { name: 'Save settings' }).click();
    expect(await page.getByRole('status').textContent()).toContain('Settings saved');
    expect((await api(base, '/v1/organizations/me', { key: f.acct.adminKey })).body.time_zone).toBe(
      'America/New_York',
    );
    for (const path of [
      '/dashboard',
      '/dashboard/members',
      '/dashboard/keys',
      '/dashboard/groups',
      '/dashboard/calls',
      '/dashboard/models',
      '/dashboard/settings',
    ]) {
      await page.goto(`${base}${path}?period=7d`);
      expect(await page.locator('footer [data-zone]').textContent(), path).toBe('America/New_York');
    }
    await page.goto(`${base}/dashboard?period=7d`);
    await screenshot(page, '13-overview-new-york');
    const days = (await tableText(page, 'by-day')).slice(1, -1);
    const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'America/New_York' }).format(new Date());
    expect(days.at(-1)![0]).toBe(today);
    const summary = (
      await api(
        base,
        `/v1/organizations/usage_summary?by=day&starting_at=${new Date(Date.now() - 9 * DAY).toISOString()}`,
        { key: f.acct.adminKey },
      )
    ).body;
    expect(summary.time_zone).toBe('America/New_York');
    const apiDays = new Map(summary.data.map((r: any) => [r.day, r.requests]));
    expect(days.map((r) => [r[0], num(r[8]!)])).toEqual(days.map((r) => [r[0], apiDays.get(r[0]) ?? 0]));
  });

  it('signs out: the session ends on the server too', async () => {
    const cookie = (await context.cookies()).find((c) => c.name === 'kg_session')!;
    await page.goto(`${base}/dashboard`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(new URL(page.url()).pathname).toBe('/dashboard/sign-in');
    await page.goto(`${base}/dashboard/keys`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/sign-in');
    const replay = await fetch(`${base}/dashboard`, {
      headers: { cookie: `kg_session=${cookie.value}` },
      redirect: 'manual',
    });
    expect(replay.status).toBe(303);
  });
});
