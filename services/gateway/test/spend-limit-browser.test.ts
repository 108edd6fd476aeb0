import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { accessibilityProblems, launchBrowser, screenshot, signIn, tableText } from './dashboard-browser';
import type { Gateway } from '../src/server';
import { api, callModel, startStack, type SeededAccount, type Stack } from './harness';
import { waitFor } from './kit/wait';

// A real browser and axe on a shared 2-core machine: each step may take a while.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/**
 * Issue 19 item 4: a member past their spend limit asks for more on the dashboard, the lead
 * approves there (a real Chromium), an alert event goes out, and the new limit lets the
 * member's calls through on every gateway instance within a second of the approval.
 */
let stack: Stack;
let peer: Gateway;
let acme: SeededAccount;
let browser: Browser;

beforeAll(async () => {
  stack = await startStack();
  peer = await stack.startPeer();
  acme = await stack.seedAccount({ name: 'Limits' });
  await waitFor(
    async () => {
      const { existsSync } = await import('node:fs');
      return existsSync(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium');
    },
    { timeout: 60_000, what: 'chromium to be installed' },
  );
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

const page = async (): Promise<Page> =>
  (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();

describe('an increase request, asked and approved on the dashboard', () => {
  it('raises the limit on both instances within a second of the approval', async () => {
    const admin = (path: string, body?: unknown) =>
      api(stack.gateway.url, `/v1/organizations${path}`, { key: acme.adminKey, body });
    const member = (await admin('/users', { email: 'dana@limits.test', name: 'Dana' })).body;
    const key = (await admin('/api_keys', { member_id: member.id, name: 'dana laptop' })).body.key as string;
    const limit = (
      await admin('/spend_limits', {
        scope: { type: 'user', user_id: member.id },
        amount: '0',
        period: 'monthly',
      })
    ).body;
    const instances = [stack.gateway.url, peer.url];
    for (const url of instances)
      await waitFor(async () => (await callModel(url, key)).status === 429, {
        timeout: 3_000,
        what: `the limit at ${url}`,
      });
    const refused = await callModel(stack.gateway.url, key);
    expect(refused.body.error.type).toBe('billing_error');
    expect(refused.headers.get('x-should-retry')).toBe('false');

    // The member asks.
    const dana = await page();
    await signIn(dana, stack.gateway.url, key);
    await dana.goto(`${stack.gateway.url}/dashboard/spend-limits`);
    expect((await tableText(dana, 'limits')).slice(1)).toEqual([
      ['dana@limits.test', 'monthly', '0.0000', '0.0000', 'own limit'],
    ]);
    await dana.getByRole('combobox', { name: 'Period' }).selectOption('monthly');
    await dana.getByLabel('New limit (USD)').fill('5');
    await dana.getByLabel('Reason').fill('release week');
    await dana.getByRole('button', { name: 'Ask for more' }).click();
    await dana.waitForURL(/\/dashboard\/spend-limits$/);
    const asked = (await tableText(dana, 'requests')).slice(1);
    expect(asked.map((r) => r.slice(1, 6))).toEqual([
      ['dana@limits.test', 'monthly', '5.0000', 'release week', 'pending'],
    ]);
    await screenshot(dana, '60-spend-limits-member');
    expect(await accessibilityProblems(dana)).toEqual([]);

    // The lead approves.
    const lead = await page();
    await signIn(lead, stack.gateway.url, acme.adminKey);
    await lead.goto(`${stack.gateway.url}/dashboard/spend-limits`);
    await screenshot(lead, '61-spend-limits-admin');
    expect(await accessibilityProblems(lead)).toEqual([]);
    const amount = lead.getByLabel('New monthly limit for dana@limits.test (USD)');
    expect(await amount.inputValue()).toBe('5.00');
    const answered = lead.waitForResponse((r) => r.url().endsWith('/dashboard/spend-limits/approve'));
    await lead.getByRole('button', { name: 'Approve' }).click();
    await answered;
    const approvedAt = Date.now();
    // Both instances let the member's calls through again, each within a second.
    const elapsed = await Promise.all(
      instances.map(async (url) => {
        await waitFor(async () => (await callModel(url, key)).status === 200, {
          timeout: 5_000,
          interval: 20,
          what: `the raise at ${url}`,
        });
        return Date.now() - approvedAt;
      }),
    );
    console.info(`increase approved: calls through on the two instances after ${elapsed.join(' ms, ')} ms`);
    for (const ms of elapsed) expect(ms).toBeLessThan(1_000);

    await lead.waitForURL(/\/dashboard\/spend-limits$/);
    expect((await tableText(lead, 'requests')).slice(1).map((r) => r[5])).toEqual(['approved']);
    const now = (await admin(`/spend_limits/${limit.id}`)).body;
    expect(now.amount).toBe('500');
    const events = await stack.gateway.store.db.sql<{ type: string; data: Record<string, unknown> }[]>`
      select type, data from alert_events where account_id = ${acme.id} and type like 'spend_limit.%' order by created_at`;
    expect(events.map((e) => e.type)).toEqual([
      'spend_limit.increase_requested',
      'spend_limit.increase_approved',
    ]);
    expect(events[1]!.data).toMatchObject({
      user_id: member.id,
      status: 'approved',
      resolved_by: acme.adminKeyId,
    });
    await dana.reload();
    expect((await tableText(dana, 'limits')).slice(1)[0]!.slice(0, 3)).toEqual([
      'dana@limits.test',
      'monthly',
      '5.0000',
    ]);
    // A member cannot approve their own request.
    const own = await dana.request.post(`${stack.gateway.url}/dashboard/spend-limits/approve`, {
      form: { id: 'x', amount_usd: '9' },
    });
    expect(own.status()).toBeGreaterThanOrEqual(400);
  });

  it('a denied request leaves the limit, and says so', async () => {
    const admin = (path: string, body?: unknown) =>
      api(stack.gateway.url, `/v1/organizations${path}`, { key: acme.adminKey, body });
    const member = (await admin('/users', { email: 'eli@limits.test', name: 'Eli' })).body;
    const key = (await admin('/api_keys', { member_id: member.id, name: 'eli laptop' })).body.key as string;
    await admin('/spend_limits', {
      scope: { type: 'user', user_id: member.id },
      amount: '0',
      period: 'daily',
    });
    const eli = await page();
    await signIn(eli, stack.gateway.url, key);
    await eli.goto(`${stack.gateway.url}/dashboard/spend-limits`);
    await eli.getByRole('combobox', { name: 'Period' }).selectOption('daily');
    await eli.getByLabel('New limit (USD)').fill('1');
    await eli.getByRole('button', { name: 'Ask for more' }).click();
    await eli.waitForURL(/\/dashboard\/spend-limits$/);
    const lead = await page();
    await signIn(lead, stack.gateway.url, acme.adminKey);
    await lead.goto(`${stack.gateway.url}/dashboard/spend-limits`);
    await lead.getByRole('button', { name: "Deny eli@limits.test's request" }).click();
    await lead.waitForURL(/\/dashboard\/spend-limits$/);
    const rows = (await tableText(lead, 'requests')).slice(1).filter((r) => r[1] === 'eli@limits.test');
    expect(rows.map((r) => r[5])).toEqual(['denied']);
    expect((await callModel(stack.gateway.url, key)).status).toBe(429);
  });
});
