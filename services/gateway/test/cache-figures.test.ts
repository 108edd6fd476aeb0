import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import catalog from '../src/pricing/catalog/price-catalog.json' with { type: 'json' };
import { accessibilityProblems, launchBrowser, screenshot, signIn, tableText } from './dashboard-browser';
import { api, startStack, type SeededAccount, type Stack } from './harness';

// A real browser and axe on a shared 2-core machine: each step may take a while.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/**
 * Issue 31 item 5: prompt caching per member and key, from real calls through the gateway to
 * the emulator (which caches as the provider does): hit rate, 5-minute and 1-hour writes, and
 * dollars saved by reads, in the account API and on the dashboard.
 */
let stack: Stack;
let acme: SeededAccount;
let browser: Browser;
const usage = { input: 0, read: 0, w5m: 0, w1h: 0 };
let member: { id: string };
let key: { id: string; key: string };

const admin = (path: string, body?: unknown) =>
  api(stack.gateway.url, `/v1/organizations${path}`, { key: acme.adminKey, body });

/** A call whose system prompt is cached for an hour and whose first message for five minutes. */
async function cachedCall(question: string) {
  const res = await api(stack.gateway.url, '/v1/messages', {
    bearer: key.key,
    body: {
      model: 'claude-opus-4-5',
      max_tokens: 16,
      system: [
        {
          type: 'text',
          text: 'You answer questions about the Keygate handbook. '.repeat(40),
          cache_control: { type: 'ephemeral', ttl: '1h' },
        },
      ],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'The handbook: '.repeat(60), cache_control: { type: 'ephemeral' } },
            { type: 'text', text: question },
          ],
        },
      ],
    },
  });
  expect(res.status).toBe(200);
  const u = res.body.usage;
  usage.input += u.input_tokens;
  usage.read += u.cache_read_input_tokens;
  usage.w5m += u.cache_creation.ephemeral_5m_input_tokens;
  usage.w1h += u.cache_creation.ephemeral_1h_input_tokens;
}

beforeAll(async () => {
  stack = await startStack();
  acme = await stack.seedAccount({ name: 'Cache' });
  member = (await admin('/users', { email: 'dana@cache.test', name: 'Dana' })).body;
  key = (await admin('/api_keys', { member_id: member.id, name: 'dana laptop' })).body;
  await cachedCall('first question');
  await cachedCall('second question');
  await cachedCall('third question');
  await stack.gateway.writer.flush();
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

/** The catalog's Opus 4.5 row: what a read token saves, in cents. */
function savedCents(reads: number): number {
  const row = catalog.models.find((m) => m.id === 'claude-opus-4-5')!.prices[0]!;
  return (reads * (row.input - row.cache_read)) / 10_000;
}

describe('the cache report', () => {
  it('gives each member and key their hit rate, writes by TTL and the dollars reads saved', async () => {
    // The emulator wrote both prefixes once, then read them on the two calls after.
    expect(usage.w1h).toBeGreaterThan(0);
    expect(usage.w5m).toBeGreaterThan(0);
    expect(usage.read).toBe(2 * (usage.w1h + usage.w5m));
    const all = usage.input + usage.read + usage.w5m + usage.w1h;
    const expected = {
      uncached_input_tokens: usage.input,
      cache_read_input_tokens: usage.read,
      cache_creation: { ephemeral_5m_input_tokens: usage.w5m, ephemeral_1h_input_tokens: usage.w1h },
      cache_hit_rate: Math.round((usage.read / all) * 10_000) / 10_000,
    };
    const byMember = await admin('/cache_report?by=member');
    expect(byMember.status).toBe(200);
    expect(byMember.body.type).toBe('cache_report');
    expect(byMember.body.data).toHaveLength(1);
    const line = byMember.body.data[0];
    expect(line).toMatchObject({ user_id: member.id, ...expected });
    expect(Number(line.saved_by_cache_reads.amount)).toBeCloseTo(savedCents(usage.read), 6);
    expect(line.saved_by_cache_reads.currency).toBe('USD');

    const byKey = await admin(`/cache_report?by=key&api_key_ids[]=${key.id}`);
    expect(byKey.body.data).toEqual([
      { api_key_id: key.id, ...expected, saved_by_cache_reads: line.saved_by_cache_reads },
    ]);
  });

  it('refuses what it cannot answer, in the provider error shape', async () => {
    const bad = await admin('/cache_report?by=team');
    expect(bad.status).toBe(400);
    expect(bad.body.error.type).toBe('invalid_request_error');
    expect(bad.body.error.message).toMatch(/by/);
    const backwards = await admin(
      '/cache_report?by=member&starting_at=2026-11-02T00:00:00Z&ending_at=2026-11-01T00:00:00Z',
    );
    expect(backwards.status).toBe(400);
    expect(backwards.body.error.message).toMatch(/ending_at/);
    const missing = await admin('/cache_report?by=member&workspace_ids[]=wrkspc_1');
    expect(missing.status).toBe(400);
  });
});

describe('cache figures on the dashboard', () => {
  it("shows a member's hit rate, writes and savings on their page and in the members list", async () => {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await signIn(page, stack.gateway.url, acme.adminKey);
    await page.goto(`${stack.gateway.url}/dashboard/members/${member.id}`);
    const text = async (attr: string) => (await page.locator(`[${attr}]`).textContent())?.trim();
    const all = usage.input + usage.read + usage.w5m + usage.w1h;
    expect(await text('data-cache-hit-rate')).toBe(`${((100 * usage.read) / all).toFixed(1)}%`);
    expect(await text('data-cache-writes-5m')).toBe(`${usage.w5m.toLocaleString('en-US')} tokens`);
    expect(await text('data-cache-writes-1h')).toBe(`${usage.w1h.toLocaleString('en-US')} tokens`);
    expect(await text('data-cache-reads')).toBe(`${usage.read.toLocaleString('en-US')} tokens`);
    expect(await text('data-cache-saved')).toBe(`$${(savedCents(usage.read) / 100).toFixed(4)}`);
    expect((await tableText(page, 'cache-per-key')).slice(1)).toEqual([
      [
        'dana laptop',
        `${((100 * usage.read) / all).toFixed(1)}%`,
        usage.w5m.toLocaleString('en-US'),
        usage.w1h.toLocaleString('en-US'),
        usage.read.toLocaleString('en-US'),
        (savedCents(usage.read) / 100).toFixed(4),
      ],
    ]);
    await screenshot(page, '70-member-cache-figures');
    expect(await accessibilityProblems(page)).toEqual([]);

    await page.goto(`${stack.gateway.url}/dashboard/members`);
    const rows = (await tableText(page, 'cache-by-member')).slice(1);
    expect(rows.map((r) => [r[0], r[4]])).toEqual([['Dana', usage.read.toLocaleString('en-US')]]);
    await page.goto(`${stack.gateway.url}/dashboard/keys/${key.id}`);
    expect(await text('data-cache-reads')).toBe(`${usage.read.toLocaleString('en-US')} tokens`);
  });
});
