import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessibilityProblems, launchBrowser, screenshot, signIn } from './dashboard-browser';
import { api, callAt, startStack, type SeededAccount, type Stack } from './harness';

/**
 * Issue 30 item 4 on the dashboard: an admin sets a member's spend limit and a key's rate limit
 * through the "Limits and policies" forms, sees them listed (with spend, what is left, the reset
 * and who set them, inherited rules beside), and the gateway then holds calls to them.
 */
let stack: Stack;
let acct: SeededAccount;
let browser: Browser;
let page: Page;

const admin = (path: string, body?: unknown) =>
  api(stack.gateway.url, `/v1/organizations${path}`, { key: acct.adminKey, body });
const call = (key: string) =>
  api(stack.gateway.url, '/v1/messages', {
    key,
    body: { model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
  });

/** The section's rows as text, one array per row. */
const rows = (p: Page) =>
  p.evaluate<string[][]>(
    `[...document.querySelectorAll('#limits tbody tr')].map((r) => [...r.cells].slice(0, 8).map((c) => (c.textContent ?? '').trim()))`,
  );

beforeAll(async () => {
  stack = await startStack();
  acct = await stack.seedAccount({ plan: 'team' });
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await signIn(page, stack.gateway.url, acct.adminKey);
});
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

describe('the Limits and policies section', { timeout: 120_000 }, () => {
  it("an admin sets a member's spend limit; the page shows it with spend, left, reset, who set it; the gateway refuses past it", async () => {
    const m = (await admin('/users', { email: 'lim-dev@example.com', name: 'Lim Dev' })).body;
    const k = (await admin('/api_keys', { member_id: m.id })).body;
    // $2.50 of Sonnet 4.5 output spent this month, and an account-wide $100 limit the member inherits.
    await stack.gateway.store.calls.insertBatch([
      callAt(acct.id, new Date().toISOString(), {
        keyId: k.id,
        memberId: m.id,
        model: 'claude-sonnet-4-5',
        usage: { input_tokens: 0, output_tokens: 166_667 },
      }),
    ]);
    await admin('/spend_limits', { scope: { type: 'organization' }, amount: '10000', period: 'monthly' });

    await page.goto(`${stack.gateway.url}/dashboard/members/${m.id}`);
    expect(await rows(page)).toContainEqual([
      'Spend limit',
      'the account',
      '$100.00',
      'monthly',
      '$2.50',
      '$97.50',
      expect.stringMatching(/^\d{4}-\d\d-01 00:00 UTC$/),
      expect.stringMatching(/^operator|^cli|@/),
    ]);

    await page.locator('summary', { hasText: 'Set a spend limit' }).click();
    await page.getByLabel('Limit (USD)').fill('3');
    await page.getByRole('button', { name: 'Set spend limit' }).click();
    await page.waitForURL(/\/dashboard\/members\/.*#limits$/);
    const own = (await rows(page)).find((r) => r[1] === 'this member');
    expect(own).toEqual([
      'Spend limit',
      'this member',
      '$3.00',
      'monthly',
      '$2.50',
      '$0.50',
      expect.stringMatching(/ UTC$/),
      expect.stringMatching(/^admin@|@.*, \d{4}-/),
    ]);
    await screenshot(page, 'controls-member');
    expect(await accessibilityProblems(page)).toEqual([]);

    // Lowered below the spend: the member's key is refused, naming the limit set on the page.
    await page.locator('summary', { hasText: 'Set a spend limit' }).click();
    await page.getByLabel('Limit (USD)').fill('2');
    await page.getByRole('button', { name: 'Set spend limit' }).click();
    await page.waitForURL(/#limits$/);
    const refused = await call(k.key);
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/monthly spend limit of \$2\.00/);

    // Removed: the account's limit applies again.
    await page
      .locator('#limits tr', { hasText: 'this member' })
      .getByRole('button', { name: 'Remove' })
      .click();
    await page.waitForURL(/#limits$/);
    expect((await rows(page)).some((r) => r[1] === 'this member')).toBe(false);
    expect((await call(k.key)).status).toBe(200);
  });

  it("an admin sets a member's rate limit on the member page (the plan's default shown as the plan's); the gateway holds all their keys to it", async () => {
    const m = (await admin('/users', { email: 'member-rate@example.com' })).body;
    const keys = [
      (await admin('/api_keys', { member_id: m.id })).body,
      (await admin('/api_keys', { member_id: m.id })).body,
    ];
    await page.goto(`${stack.gateway.url}/dashboard/members/${m.id}`);
    const planRows = (await rows(page)).filter((r) => r[1] === 'the plan (each member)');
    expect(planRows.map((r) => [r[0], r[2], r[7]])).toEqual([
      ['Rate limit', '2,000 requests a minute', "the plan's default for each member"],
      ['Rate limit', '2,000,000 input tokens a minute', "the plan's default for each member"],
      ['Rate limit', '400,000 output tokens a minute', "the plan's default for each member"],
    ]);
    await page.locator('summary', { hasText: 'Set rate limits' }).click();
    await page.getByLabel('Requests a minute').fill('1');
    await page.getByRole('button', { name: 'Set rate limits' }).click();
    await page.waitForURL(/\/dashboard\/members\/.*#limits$/);
    const own = (await rows(page)).filter((r) => r[1] === 'this member');
    expect(own.map((r) => [r[0], r[2]])).toEqual([['Rate limit', '1 requests a minute']]);
    expect(own[0]![7]).toMatch(/@.*, \d{4}-\d\d-\d\d/);
    // The member's own limit replaces the plan's default.
    expect((await rows(page)).some((r) => r[1] === 'the plan (each member)')).toBe(false);
    await screenshot(page, 'controls-member-rate');

    expect((await call(keys[0].key)).status).toBe(200);
    const second = await call(keys[1].key);
    expect(second.status).toBe(429);
    expect(second.body.error.message).toMatch(/^This member's rate limit of 1 requests per minute/);

    await page
      .locator('#limits tbody tr', { hasText: '1 requests a minute' })
      .getByRole('button', { name: 'Remove' })
      .click();
    await page.waitForURL(/#limits$/);
    expect((await rows(page)).some((r) => r[1] === 'this member')).toBe(false);
  });

  it("the group page: its members, spend limit, rate limits and model policy; the form sets the group's rate limit and the gateway holds its members to it", async () => {
    const m = (await admin('/users', { email: 'group-dev@example.com' })).body;
    const k = (await admin('/api_keys', { member_id: m.id })).body;
    const g = (await admin('/rbac_groups', { name: 'Contractors' })).body;
    await admin(`/rbac_groups/${g.id}/members`, { user_id: m.id });
    await admin('/spend_limits', { scope: { type: 'rbac_group', rbac_group_id: g.id }, amount: '5000' });
    await admin('/model_policies', {
      scope: { type: 'rbac_group', rbac_group_id: g.id },
      allowed_models: ['claude-sonnet-*'],
      max_tokens: null,
    });
    await page.goto(`${stack.gateway.url}/dashboard/rbac-groups/${g.id}`);
    expect(await page.locator('h1').textContent()).toContain('Group: Contractors');
    expect(await page.locator('.group-members li').allTextContents()).toEqual(['group-dev@example.com']);
    await page.locator('summary', { hasText: 'Set rate limits' }).click();
    await page.getByLabel('Requests a minute').fill('1');
    await page.getByRole('button', { name: 'Set rate limits' }).click();
    await page.waitForURL(/\/dashboard\/rbac-groups\/.*#limits$/);
    const own = (await rows(page)).filter((r) => r[1] === 'this group').map((r) => [r[0], r[2]]);
    expect(own).toEqual(
      expect.arrayContaining([
        ['Spend limit', '$50.00'],
        ['Rate limit', '1 requests a minute'],
        ['Model policy', 'claude-sonnet-*'],
      ]),
    );
    await screenshot(page, 'controls-group');
    expect((await call(k.key)).status).toBe(200);
    const second = await call(k.key);
    expect(second.status).toBe(429);
    expect(second.body.error.message).toMatch(
      new RegExp(`^The rate limit of group ${g.id} of 1 requests per minute`),
    );
    // The group's spend limit holds each member to it: the page shows the most a member has
    // spent against it and what is left, not a dash.
    await page.reload();
    const spendRow = (await rows(page)).find((r) => r[0] === 'Spend limit' && r[1] === 'this group');
    expect(spendRow?.slice(4, 6)).toEqual([
      expect.stringMatching(/^\$0\.\d\d$/),
      expect.stringMatching(/^\$(49|50)\.\d\d$/),
    ]);
  });

  it("an admin sets a key's rate limit; the page lists it; the gateway holds the key to it", async () => {
    const m = (await admin('/users', { email: 'rate-dev@example.com' })).body;
    const k = (await admin('/api_keys', { member_id: m.id })).body;
    await page.goto(`${stack.gateway.url}/dashboard/keys/${k.id}`);
    await page.locator('summary', { hasText: 'Set rate limits' }).click();
    await page.getByLabel('Requests a minute').fill('1');
    await page.getByRole('button', { name: 'Set rate limits' }).click();
    await page.waitForURL(/\/dashboard\/keys\/.*#limits$/);
    const rpm = (await rows(page)).find((r) => r[2] === '1 requests a minute');
    expect(rpm?.slice(0, 2)).toEqual(['Rate limit', 'this key']);
    expect(rpm?.[7]).toMatch(/@.*, \d{4}-\d\d-\d\d/);
    await screenshot(page, 'controls-key');

    expect((await call(k.key)).status).toBe(200);
    const second = await call(k.key);
    expect(second.status).toBe(429);
    expect(second.body.error.type).toBe('rate_limit_error');

    // The member's page lists the key's limit among what applies to them.
    await page.goto(`${stack.gateway.url}/dashboard/members/${m.id}`);
    expect((await rows(page)).some((r) => r[0] === 'Rate limit' && r[2] === '1 requests a minute')).toBe(
      true,
    );
  });

  it('the account page: a model policy set there applies to every key; bad input is a 400 saying why', async () => {
    const key = (await admin('/api_keys', { name: 'app' })).body.key as string;
    await page.goto(`${stack.gateway.url}/dashboard/settings`);
    await page.locator('summary', { hasText: 'Set the allowed models' }).click();
    await page.getByLabel(/^Models/).fill('claude-haiku-*');
    await page.getByRole('button', { name: 'Set model policy' }).click();
    await page.waitForURL(/\/dashboard\/settings#limits$/);
    expect(await rows(page)).toContainEqual(
      expect.arrayContaining(['Model policy', 'this account', 'claude-haiku-*']),
    );
    await screenshot(page, 'controls-account');
    const refused = await call(key);
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/not allowed by the account's model policy/);
    await page
      .locator('#limits tr', { hasText: 'Model policy' })
      .getByRole('button', { name: 'Remove' })
      .click();
    await page.waitForURL(/#limits$/);
    expect((await call(key)).status).toBe(200);

    // Straight posts with the session's CSRF token: what the forms guard against.
    const csrf = await page.locator('#limits input[name=_csrf]').first().inputValue();
    const post = (path: string, fields: Record<string, string>) =>
      page.request.post(`${stack.gateway.url}/dashboard/controls/${path}`, {
        form: { _csrf: csrf, back: '/dashboard/settings', ...fields },
        headers: { origin: stack.gateway.url },
        maxRedirects: 0,
      });
    const bad: [Record<string, string>, string, RegExp][] = [
      [{ subject: 'account', models: 'gpt 4' }, 'policy', /a model id/],
      [{ subject: 'account', amount_usd: '-1', period: 'monthly' }, 'spend-limit', /amount_usd/],
      [{ subject: 'account' }, 'rate-limits', /Give at least one of the three rate limits/],
      [
        { subject: 'member:user_nope', amount_usd: '5', period: 'monthly' },
        'spend-limit',
        /No active member/,
      ],
      [{ subject: 'account', rule: 'policy' }, 'remove', /no model policy of its own/],
      [
        { subject: 'account', amount_usd: '5', period: 'monthly', back: 'https://evil.example' },
        'spend-limit',
        /back/,
      ],
    ];
    for (const [fields, path, message] of bad) {
      const r = await post(path, fields);
      const text = await r.text();
      expect([400, 404], `${path} ${JSON.stringify(fields)}: ${text}`).toContain(r.status());
      expect(text).toMatch(message);
    }
    const noCsrf = await page.request.post(`${stack.gateway.url}/dashboard/controls/spend-limit`, {
      form: { subject: 'account', back: '/dashboard/settings', amount_usd: '5', period: 'monthly' },
      headers: { origin: stack.gateway.url },
      maxRedirects: 0,
    });
    expect(noCsrf.status()).toBe(403);
    expect(await noCsrf.text()).toMatch(/did not come from this dashboard/);
  });
});
