import { DEFAULT_ADMIN_KEY } from '@keygate/emulator';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { accessibilityProblems, launchBrowser, screenshot, signIn, tableText } from './dashboard-browser';
import { api, callAroundKeygate, PROVIDER_KEY, startStack, type Stack } from './harness';

// A real browser and axe on a shared 2-core machine: each step may take a while.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

// The provider's published rates, USD per million tokens, read 2026-11-25 from
// https://platform.claude.com/docs/en/models/opus-5-5/overview, .../haiku-5-5/overview and
// https://platform.claude.com/docs/en/about-claude/pricing (Sonnet 4.6). Written out by hand here,
// apart from the gateway's catalog and the emulator's ledger.
type Rates = { in: number; w5: number; w1: number; read: number; out: number };
const OPUS_5_5: Rates = { in: 4, w5: 5, w1: 8, read: 0.2, out: 20 };
const HAIKU_5_5: Rates = { in: 0.1, w5: 0.125, w1: 0.2, read: 0.01, out: 0.5 };
const SONNET_4_6: Rates = { in: 3, w5: 3.75, w1: 6, read: 0.3, out: 15 };

interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
}
const tokens = (u: Usage) =>
  u.input_tokens +
  u.output_tokens +
  u.cache_read_input_tokens +
  u.cache_creation.ephemeral_5m_input_tokens +
  u.cache_creation.ephemeral_1h_input_tokens;
/** Cents by hand: tokens × USD per million / 10,000. */
const cents = (u: Usage, r: Rates) =>
  (u.input_tokens * r.in +
    u.cache_creation.ephemeral_5m_input_tokens * r.w5 +
    u.cache_creation.ephemeral_1h_input_tokens * r.w1 +
    u.cache_read_input_tokens * r.read +
    u.output_tokens * r.out) /
  10_000;
/** As the page prints dollars: four decimals. */
const usd = (c: number) => (c / 100).toFixed(4);
const num = (n: number) => n.toLocaleString('en-US');

const VIEWPORT = { width: 1366, height: 768 };
const TODAY = new Date().toISOString().slice(0, 10);
let stack: Stack;
let browser: Browser;
let base: string;
let adminKey: string;
let page: Page;

async function call(model: string, headers: Record<string, string> = {}): Promise<Usage> {
  const res = await api(base, '/v1/messages', {
    bearer: stack.appKey,
    headers,
    body: { model, max_tokens: 128, messages: [{ role: 'user', content: 'Reconcile me, please.' }] },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.usage as Usage;
}

beforeAll(async () => {
  stack = await startStack();
  base = stack.gateway.url;
  adminKey = (await stack.newKey({ kind: 'admin' })).secret;
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: VIEWPORT })).newPage();
  await signIn(page, base, adminKey);
});
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

const fact = (name: string) => page.locator(`[data-fact="${name}"]`).textContent();

describe('the reconciliation page (account admin, real browser)', () => {
  it('without an Admin API key: says reconciliation is off, offers no button, and refuses a key that is not an admin key', async () => {
    const res = await page.goto(`${base}/dashboard/reconciliation`);
    expect(res?.status()).toBe(200);
    expect(await page.getByRole('link', { name: 'Reconcile' }).count()).toBe(1);
    expect(await fact('admin-key')).toMatch(/not set/);
    expect(await page.getByRole('button', { name: 'Reconcile now' }).count()).toBe(0);
    expect(await accessibilityProblems(page)).toEqual([]);

    await page.getByLabel(/Admin API key/).fill(PROVIDER_KEY);
    await page.getByRole('button', { name: 'Save key' }).click();
    await page.waitForLoadState('domcontentloaded');
    expect(await page.locator('body').textContent()).toContain(
      "must be a provider Admin API key ('sk-ant-admin01-…')",
    );
    const sql = stack.gateway.store.db.sql;
    const [row] = await sql`select provider_admin_key_sealed from accounts where id = ${stack.account.id}`;
    expect(row!.provider_admin_key_sealed).toBeNull();
  });

  it('saves the key sealed, then "Reconcile now" shows per day × model and per provider key the drift, worked out by hand, with its likely cause', async () => {
    await page.goto(`${base}/dashboard/reconciliation`);
    await page.getByLabel(/Admin API key/).fill(DEFAULT_ADMIN_KEY);
    await page.getByRole('button', { name: 'Save key' }).click();
    await page.waitForLoadState('domcontentloaded');
    const hint = await fact('admin-key');
    expect(hint).toMatch(/^sk-ant-admin.*…/);
    expect(hint).not.toContain(DEFAULT_ADMIN_KEY);
    expect(await page.content()).not.toContain(DEFAULT_ADMIN_KEY);

    // Through Keygate: Opus 5.5 plain and with a 5-minute cache write, Haiku 5.5.
    const opus = [
      await call('claude-opus-5-5'),
      await call('claude-opus-5-5', { 'x-emulator-scenario': 'cache_write_5m' }),
    ];
    const haiku = await call('claude-haiku-5-5');
    expect(opus[1]!.cache_creation.ephemeral_5m_input_tokens).toBeGreaterThan(0);
    await stack.calls();
    // Straight at the provider with the account's provider key: Keygate never sees it.
    const around = (await callAroundKeygate(stack, 'claude-sonnet-4-6')) as Usage;

    await page.getByLabel('From (UTC day)').fill(TODAY);
    await page.getByLabel('Through').fill(TODAY);
    await page.getByRole('button', { name: 'Reconcile now' }).click();
    await page.waitForLoadState('domcontentloaded');
    expect(await page.locator('[role="status"]').textContent()).toContain('Reconciled just now');
    await screenshot(page, '50-reconciliation-1366');
    expect(await accessibilityProblems(page)).toEqual([]);
    const width = await page.evaluate('document.documentElement.scrollWidth');
    expect(width).toBeLessThanOrEqual(VIEWPORT.width);

    const opusCents = cents(opus[0]!, OPUS_5_5) + cents(opus[1]!, OPUS_5_5);
    const opusTokens = tokens(opus[0]!) + tokens(opus[1]!);
    const aroundCents = cents(around, SONNET_4_6);
    const drift = await tableText(page, 'drift');
    expect(drift[0]).toEqual([
      'Day',
      'Model',
      'Provider tokens',
      'Keygate tokens',
      'Token drift',
      'Provider (USD)',
      'Keygate (USD)',
      'Drift (USD)',
      'Drift',
      'Likely cause',
    ]);
    const byModel = Object.fromEntries(drift.slice(1).map((r) => [r[1], r]));
    expect(byModel['claude-opus-5-5']).toEqual([
      TODAY,
      'claude-opus-5-5',
      num(opusTokens),
      num(opusTokens),
      '0',
      usd(opusCents),
      usd(opusCents),
      '0.0000',
      '0.00%',
      'none: the two agree',
    ]);
    expect(byModel['claude-haiku-5-5']!.slice(2, 7)).toEqual([
      num(tokens(haiku)),
      num(tokens(haiku)),
      '0',
      usd(cents(haiku, HAIKU_5_5)),
      usd(cents(haiku, HAIKU_5_5)),
    ]);
    const sonnet = byModel['claude-sonnet-4-6']!;
    expect(sonnet.slice(2, 8)).toEqual([
      num(tokens(around)),
      '0',
      `-${num(tokens(around))}`,
      usd(aroundCents),
      usd(0),
      `-${usd(aroundCents)}`,
    ]);
    expect(sonnet[9]).toMatch(/calls made with the provider key outside Keygate/);
    expect(await fact('totals')).toBe(
      `${usd(opusCents + cents(haiku, HAIKU_5_5) + aroundCents)} / ${usd(opusCents + cents(haiku, HAIKU_5_5))}`,
    );

    // Per provider API key: one key, Keygate's, with the call made around Keygate as the gap.
    const keys = await tableText(page, 'drift-by-key');
    expect(keys).toHaveLength(2);
    const ours = opusTokens + tokens(haiku);
    const [, line] = keys;
    expect(line![0]).toBe(TODAY);
    expect(line![1]).toContain("Keygate's provider key");
    expect(line![1]).toContain(PROVIDER_KEY.slice(-4));
    expect(line!.slice(2, 6)).toEqual([
      num(ours + tokens(around)),
      num(ours),
      `-${num(tokens(around))}`,
      usd(opusCents + cents(haiku, HAIKU_5_5)),
    ]);
    expect(line![6]).toMatch(/outside Keygate/);

    // The account API has the same run.
    const latest = await api(base, '/v1/organizations/reconciliation', { key: adminKey });
    expect(latest.body.by_api_key).toHaveLength(1);
    expect(latest.body.by_api_key[0]).toMatchObject({ keygate_key: true, token_drift: -tokens(around) });
  });

  it('a member sees neither the link nor the page', async () => {
    const member = await api(base, '/v1/organizations/users', {
      key: adminKey,
      body: { email: 'm@recon.test' },
    });
    expect(member.status, JSON.stringify(member.body)).toBe(201);
    const key = await stack.newKey({ memberId: member.body.id });
    const other = await (await browser.newContext({ viewport: VIEWPORT })).newPage();
    await signIn(other, base, key.secret);
    expect(await other.getByRole('link', { name: 'Reconcile' }).count()).toBe(0);
    const res = await other.goto(`${base}/dashboard/reconciliation`);
    expect(res?.status()).toBe(403);
    expect(await other.locator('body').textContent()).toContain('Only an account admin');
    await other.context().close();
  });
});
