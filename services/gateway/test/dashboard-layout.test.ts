import { randomUUID } from 'node:crypto';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { launchBrowser, screenshot, signIn, tableText } from './dashboard-browser';
import { seedDashboard, type DashboardFixture } from './dashboard-seed';
import { api, callModel, startStack, type Stack } from './harness';

// A real browser on a shared 2-core machine: each step may take a while.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/** A common laptop screen, where a team lead reads the dashboard. */
const VIEWPORT = { width: 1366, height: 768 };

let stack: Stack;
let f: DashboardFixture;
let browser: Browser;
let page: Page;
let base: string;
const session = randomUUID();

beforeAll(async () => {
  stack = await startStack();
  base = stack.gateway.url;
  f = await seedDashboard(stack);
  const admin = (path: string, body: object) =>
    api(base, `/v1/organizations${path}`, { key: f.acct.adminKey, body });
  // Alice's Claude Code key, named by default, and a session of two calls through it.
  const cc = (await admin('/api_keys', { member_id: f.alice.id, app: 'claude-code', environment: 'laptop' }))
    .body;
  const headers = { 'x-claude-code-session-id': session, 'user-agent': 'claude-cli/2.1.330 (external, cli)' };
  for (let i = 0; i < 2; i++) expect((await callModel(base, cc.key, headers)).status).toBe(200);
  // Budgets with thresholds crossed: the widest cells of the budgets table.
  for (const [scope, target_id] of [
    ['account', undefined],
    ['user', f.alice.id],
  ] as const)
    expect(
      (
        await admin('/budgets', {
          scope,
          ...(target_id ? { target_id } : {}),
          limit_cents: 1,
          thresholds_percent: [10, 50, 80, 100],
          hard_cap: false,
        })
      ).status,
    ).toBe(201);
  // A call after the budgets: every threshold is crossed, with its time (the longest cell).
  expect((await callModel(base, f.aliceKey.secret)).status).toBe(200);
  await stack.gateway.writer.flush();
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: VIEWPORT })).newPage();
  await signIn(page, base, f.acct.adminKey);
});
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

/** Asserts the element lies wholly inside the viewport's width, seen without scrolling sideways. */
async function onScreen(el: Locator, what: string): Promise<void> {
  const box = await el.boundingBox();
  expect(box, what).not.toBeNull();
  expect(box!.x, what).toBeGreaterThanOrEqual(0);
  expect(box!.x + box!.width, what).toBeLessThanOrEqual(VIEWPORT.width);
}

async function headersOnScreen(table: string, labels: string[]): Promise<void> {
  for (const label of labels)
    await onScreen(
      page.locator(`#${table} thead th`, { hasText: new RegExp(`^${label.replace(/[()]/g, '\\$&')}$`) }),
      `${table}: ${label}`,
    );
}

/** Asserts `inner` is drawn inside `outer` (nothing cut off by its edges). */
async function inside(inner: Locator, outer: Locator, what: string): Promise<void> {
  const [a, b] = [await inner.boundingBox(), await outer.boundingBox()];
  expect(a && b, what).toBeTruthy();
  expect(a!.height, what).toBeGreaterThan(0);
  expect(a!.x, what).toBeGreaterThanOrEqual(b!.x);
  expect(a!.y, what).toBeGreaterThanOrEqual(b!.y);
  expect(a!.x + a!.width, what).toBeLessThanOrEqual(b!.x + b!.width);
  expect(a!.y + a!.height, what).toBeLessThanOrEqual(b!.y + b!.height);
}

describe('the dashboard on a 1366 px screen', () => {
  it('the call log shows time, member, key, model, endpoint, status and cost without scrolling; each call names its member', async () => {
    await page.goto(`${base}/dashboard/calls?period=30d`);
    await screenshot(page, '40-calls-1366');
    await headersOnScreen('calls', ['Member', 'Key', 'Model', 'Endpoint', 'Status', 'Cost (USD)']);
    const [head, ...rows] = await tableText(page, 'calls');
    const col = (label: string) => head!.indexOf(label);
    expect(head!.slice(0, 7)).toEqual([
      'Time (UTC)',
      'Member',
      'Key',
      'Model',
      'Endpoint',
      'Status',
      'Cost (USD)',
    ]);
    const members = new Map(rows.map((r) => [r[col('Key')], r[col('Member')]]));
    expect(members.get('alice laptop')).toBe('alice@dash.test');
    expect(members.get('bob ci')).toBe('bob@dash.test');
    expect(members.get('web app')).toBe('(none)');
    // A key created without a name is named by what it is for.
    expect(members.get('live key of alice@dash.test for claude-code/laptop')).toBe('alice@dash.test');
    // Readable without scrolling sideways: the log is no wider than its box, and the token
    // detail, timings and group open on the row.
    const fits = await page.evaluate(
      `(() => { const box = document.querySelector('#calls').closest('.scroll'); return [box.scrollWidth, box.clientWidth]; })()`,
    );
    expect((fits as number[])[0]).toBeLessThanOrEqual((fits as number[])[1]!);
    expect(await page.locator('#calls thead th:visible').allTextContents()).toHaveLength(8);
    const row = page.locator('#calls tbody tr', { hasText: 'alice laptop' }).first();
    await row.getByText('Details').click();
    const detail = await row.locator('td.more dl').textContent();
    for (const label of ['Uncached input', 'Output', 'Latency ms']) expect(detail).toContain(label);
    await screenshot(page, '40-calls-1366-details');
    await page.setViewportSize({ width: 1920, height: 1080 });
    await page.reload();
    await screenshot(page, '40-calls-1920');
    await page.setViewportSize(VIEWPORT);
  });

  it('the groups page labels a Claude Code session with its member and client; member and cost on screen', async () => {
    await page.goto(`${base}/dashboard/groups?period=30d`);
    await screenshot(page, '41-groups-1366');
    await headersOnScreen('groups', ['Group', 'Member', 'Client', 'Cost (USD)', 'Requests', 'Errors']);
    const [head, ...rows] = await tableText(page, 'groups');
    const col = (label: string) => head!.indexOf(label);
    const row = (id: string) => rows.find((r) => r[0] === id)!;
    expect([row(session)[col('Member')], row(session)[col('Client')], row(session)[col('Requests')]]).toEqual(
      ['alice@dash.test', 'Claude Code', '2'],
    );
    expect([row('ci-run-7')[col('Member')], row('ci-run-7')[col('Client')]]).toEqual([
      'bob@dash.test',
      'bob ci',
    ]);
    // The session's UUID is cut short on screen, whole in the link's text and on its page.
    await onScreen(page.getByRole('link', { name: session }), 'session link');
    await page.getByRole('link', { name: session }).click();
    expect(await page.locator('h1').textContent()).toBe(`Group: ${session}`);
  });

  it('the budgets page shows how far each budget is and what happens at the limit without scrolling', async () => {
    await page.goto(`${base}/dashboard/budgets`);
    await screenshot(page, '42-budgets-1366');
    await headersOnScreen('budgets', [
      'Budget',
      'Applies to',
      'Used',
      'Spent (USD)',
      'Limit (USD)',
      'At the limit',
    ]);
    const [head, ...rows] = await tableText(page, 'budgets');
    expect(rows).toHaveLength(2);
    for (const r of rows) {
      expect(r[head!.indexOf('At the limit')]).toBe('alert only');
      expect(r[head!.indexOf('Thresholds')]).toMatch(/^10% crossed .*; 100% crossed /);
    }
    // Every column fits: the thresholds' history wraps instead of widening the table.
    await onScreen(page.locator('#budgets'), 'budgets table');
  });

  it('the charts label their days and their scale inside the chart, for a week and for 30 days', async () => {
    for (const [period, days] of [
      ['7d', 7],
      ['30d', 30],
    ] as const) {
      await page.goto(`${base}/dashboard?period=${period}`);
      await screenshot(page, `43-overview-${period}-1366`);
      for (const id of ['chart-tokens', 'chart-cost']) {
        const figure = page.locator('figure.chart', { has: page.locator(`#${id}`) });
        const labels = figure.locator('tbody th span.day');
        const count = await labels.count();
        expect(count, `${id} ${period}`).toBeGreaterThanOrEqual(Math.min(days, 4));
        for (let i = 0; i < count; i++) await inside(labels.nth(i), figure, `${id} day label ${i}`);
        // The last day is always labelled: where today's bar is.
        const today = new Date().toISOString().slice(5, 10);
        expect(await labels.last().textContent()).toBe(today);
        const scale = figure.locator('.chart-scale li');
        expect(await scale.count()).toBe(5);
        for (let i = 0; i < 5; i++) await inside(scale.nth(i), figure, `${id} scale label ${i}`);
      }
      // The scale's top is at or above the highest day: the tallest bar stays under it.
      const top = Number(
        (await page.locator('.chart-scale').first().getAttribute('data-scale-max'))!.replaceAll(',', ''),
      );
      const dayTotals = (await tableText(page, 'chart-tokens'))
        .slice(1)
        .map((r) => r.slice(1).reduce((t, c) => t + Number(c.replaceAll(',', '')), 0));
      expect(Math.max(...dayTotals)).toBeGreaterThan(0);
      expect(top).toBeGreaterThanOrEqual(Math.max(...dayTotals));
      expect(top).toBeLessThan(Math.max(...dayTotals) * 2.5);
    }
  });

  it('every other page: the page fits the screen and each table shows its first columns', async () => {
    for (const path of [
      '/dashboard/members',
      '/dashboard/keys',
      '/dashboard/models',
      '/dashboard/billing',
      '/dashboard/settings',
    ]) {
      await page.goto(`${base}${path}?period=30d`);
      await screenshot(page, `46-${path.split('/').pop()}-1366`);
      // Nothing but a table's own scroll area may be wider than the screen.
      const width = await page.evaluate('document.documentElement.scrollWidth');
      expect(width, path).toBeLessThanOrEqual(VIEWPORT.width);
      const tables = page.locator('table[data-table]');
      for (let t = 0; t < (await tables.count()); t++) {
        const heads = tables.nth(t).locator('thead th');
        for (let i = 0; i < Math.min(3, await heads.count()); i++)
          await onScreen(heads.nth(i), `${path} table ${t} column ${i}`);
      }
    }
  });

  it('no page shows raw Markdown or misses its icon: no backtick in any text, no answer of 400 or more', async () => {
    const failed: string[] = [];
    const watch = (res: { status(): number; url(): string }) => {
      if (res.status() >= 400) failed.push(`${res.status()} ${res.url()}`);
    };
    page.on('response', watch);
    try {
      for (const path of [
        '/dashboard',
        '/dashboard/calls',
        '/dashboard/members',
        '/dashboard/keys',
        '/dashboard/models',
        '/dashboard/groups',
        '/dashboard/budgets',
        '/dashboard/billing',
        '/dashboard/settings',
      ]) {
        await page.goto(`${base}${path}?period=30d`);
        expect(await page.evaluate('document.body.innerText'), path).not.toContain('`');
        expect(await page.locator('link[rel="icon"]').getAttribute('href'), path).toBe(
          '/dashboard/assets/favicon.svg',
        );
      }
    } finally {
      page.off('response', watch);
    }
    expect(failed).toEqual([]);
    const icon = await fetch(`${base}/favicon.ico`);
    expect([icon.status, icon.headers.get('content-type')]).toEqual([200, 'image/svg+xml']);
    expect(await icon.text()).toMatch(/^<svg /);
  });

  it('a trial that ended on a gateway without checkout sends the admin to the operator, on the banner and the billing page', async () => {
    const lapsed = await stack.seedAccount({ plan: 'team', name: 'Lapsed Co', trialDays: 0 });
    const other = await (await browser.newContext({ viewport: VIEWPORT })).newPage();
    await signIn(other, base, lapsed.adminKey);
    const banner = other.locator('[data-standing="blocked"]');
    await screenshot(other, '44-banner-no-checkout');
    expect(await banner.textContent()).toMatch(/ask your Keygate operator to extend the trial/);
    expect(await banner.textContent()).not.toMatch(/subscribe/i);
    await other.goto(`${base}/dashboard/billing`);
    expect(await other.getByRole('button', { name: /Subscribe/ }).count()).toBe(0);
    expect(await other.locator('.billing-actions').textContent()).toContain('keygate account set-trial');
    expect(
      await other.locator('.billing-actions code', { hasText: 'keygate account set-trial' }).count(),
    ).toBe(1);
    expect(await other.evaluate('document.body.innerText')).not.toContain('`');

    // The operator sets the trial from the dashboard: calls resume, the banner is gone.
    const key = (await api(base, '/v1/organizations/api_keys', { key: lapsed.adminKey, body: {} })).body.key;
    expect((await callModel(base, key)).status).toBe(402);
    const operator = await (await browser.newContext({ viewport: VIEWPORT })).newPage();
    await signIn(operator, base, stack.config.operatorToken!);
    await operator.goto(`${base}/dashboard/billing`);
    const through = new Date(Date.now() + 10 * 86_400_000).toISOString().slice(0, 10);
    await operator.getByLabel('Extend the trial of').selectOption(lapsed.id);
    await operator.getByLabel('Trial runs through (UTC, inclusive)').fill(through);
    await operator.getByRole('button', { name: 'Set trial' }).click();
    await operator.waitForLoadState('domcontentloaded');
    await screenshot(operator, '45-operator-set-trial');
    expect(await operator.locator('[role="status"]').textContent()).toContain(
      `the trial of ${lapsed.id} runs until ${through} (end of that day, UTC)`,
    );
    expect((await callModel(base, key)).status).toBe(200);
    await other.goto(`${base}/dashboard`);
    expect(await other.locator('[data-standing]').count()).toBe(0);
    await operator.context().close();
    await other.context().close();
  });
});
