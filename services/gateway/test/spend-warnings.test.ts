import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { launchBrowser, screenshot, signIn } from './dashboard-browser';
import { api, startStack, type SeededAccount, type Stack } from './harness';
import { ALLOW_LOOPBACK_RECEIVERS, startReceiver, type Receiver } from './webhook-receiver';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

/**
 * Issue 31 item 6: a member's spend limit warns at 50, 80 and 100% (once each per period) as a
 * signed webhook, a notice on the dashboard, and `keygate statusline` for Claude Code.
 */
let stack: Stack;
let acme: SeededAccount;
let receiver: Receiver;
let browser: Browser;
let member: { id: string };
let key: string;
let limitId: string;

const admin = (path: string, body?: unknown) =>
  api(stack.gateway.url, `/v1/organizations${path}`, { key: acme.adminKey, body });

/** An Opus 4.5 call of `tokens` output tokens: 400 of them cost one cent. */
const spend = (tokens: number) =>
  api(stack.gateway.url, '/v1/messages', {
    bearer: key,
    headers: { 'x-emulator-output-tokens': String(tokens) },
    body: { model: 'claude-opus-4-5', max_tokens: tokens, messages: [{ role: 'user', content: 'hi' }] },
  });

/** A call, then its charge on the ledger (where crossings are found). */
async function charged(tokens: number) {
  const res = await spend(tokens);
  await stack.gateway.writer.flush();
  await stack.gateway.limits.admission.settled();
  return res;
}

/** `keygate statusline` as Claude Code runs it: session JSON on stdin, one line out. */
function statusline(env: Record<string, string>, args: string[] = []) {
  const bin = join(import.meta.dirname, '../bin/keygate.js');
  const started = Date.now();
  return new Promise<{ code: number; stdout: string; ms: number }>((resolve) => {
    const child = execFile(
      process.execPath,
      [bin, 'statusline', ...args],
      { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env }, timeout: 60_000 },
      (err, stdout) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, ms: Date.now() - started }),
    );
    child.stdin?.end(JSON.stringify({ session_id: 's1', model: { display_name: 'Opus' } }));
  });
}

const delivered = async (n: number) => {
  await receiver.waitFor((r) => r.length >= n);
  return receiver.received.map((r) => [r.event.type, r.event.data.threshold_percent, r.verified]);
};

beforeAll(async () => {
  stack = await startStack({ KEYGATE_WEBHOOK_POLL_MS: '50', ...ALLOW_LOOPBACK_RECEIVERS });
  acme = await stack.seedAccount({ name: 'Warnings' });
  receiver = await startReceiver();
  const hook = await admin('/webhooks', { url: receiver.url, events: ['spend_limit.threshold_crossed'] });
  expect(hook.status).toBe(201);
  receiver.useSecret(hook.body.secret);
  member = (await admin('/users', { email: 'dana@warn.test', name: 'Dana' })).body;
  key = (await admin('/api_keys', { member_id: member.id, name: 'dana laptop' })).body.key;
  const limit = await admin('/spend_limits', {
    scope: { type: 'user', user_id: member.id },
    amount: '100',
    period: 'monthly',
  });
  expect([200, 201]).toContain(limit.status);
  limitId = limit.body.id;
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await stack?.close();
});

describe('warnings before the wall', () => {
  it('sends one signed webhook per threshold a real call crosses, and none again', async () => {
    // 50 cents and the input: past 50%.
    expect((await charged(20_000)).status).toBe(200);
    expect(await delivered(1)).toEqual([['spend_limit.threshold_crossed', 50, true]]);
    expect(receiver.received[0]!.event.data).toMatchObject({
      spend_limit_id: limitId,
      user_id: member.id,
      period: 'monthly',
      amount: '100',
    });
    // 30 more: past 80%.
    expect((await charged(12_000)).status).toBe(200);
    expect(await delivered(2)).toEqual([
      ['spend_limit.threshold_crossed', 50, true],
      ['spend_limit.threshold_crossed', 80, true],
    ]);
    // One more cent crosses nothing new: nothing more is queued.
    expect((await charged(400)).status).toBe(200);
    const events = async () =>
      (
        await stack.gateway.store.db.sql<{ n: number }[]>`
          select count(*)::int as n from alert_events where account_id = ${acme.id} and type = 'spend_limit.threshold_crossed'`
      )[0]!.n;
    expect(await events()).toBe(2);
  });

  it("the statusline command prints the member's spend against their limit from the gateway", async () => {
    const out = await statusline({ ANTHROPIC_BASE_URL: stack.gateway.url, ANTHROPIC_AUTH_TOKEN: key });
    expect(out.code).toBe(0);
    const resets = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1));
    const day = resets.toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });
    expect(out.stdout).toBe(`$0.81 of $1.00 monthly (81%) · resets ${day}\n`);
    // The endpoint it reads, with the member's key.
    const status = await api(stack.gateway.url, '/keygate/v1/spend', { bearer: key });
    expect(status.body).toMatchObject({
      type: 'spend_status',
      user_id: member.id,
      limits: [{ period: 'monthly', spend_limit_id: limitId, amount: '100' }],
    });
    expect(Number(status.body.limits[0].period_to_date_spend)).toBeCloseTo(81, 0);
    const refused = await api(stack.gateway.url, '/keygate/v1/spend', { bearer: 'kg_live_nope' });
    expect(refused.status).toBe(401);
    expect(refused.body.error.type).toBe('authentication_error');
  });

  it('shows a notice on the member page, to the member and to the admin', async () => {
    for (const [who, token, text] of [
      ['member', key, 'You have used 81% of your monthly spend limit: $0.81 of $1.00'],
      ['admin', acme.adminKey, 'Dana has used 81% of their monthly spend limit: $0.81 of $1.00'],
    ] as const) {
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
      await signIn(page, stack.gateway.url, token);
      for (const path of [`/dashboard/members/${member.id}`, '/dashboard']) {
        await page.goto(`${stack.gateway.url}${path}`);
        const notice =
          (await page.locator(`[data-spend-warning="${member.id}:monthly"]`).textContent()) ?? '';
        expect(notice.replace(/\s+/g, ' ')).toContain(text);
      }
      await screenshot(page, `71-spend-notice-${who}`);
    }
  });

  it('the 100% warning goes once when the limit is reached, and the call is refused', async () => {
    // Lowered under what is spent: the next call finds the limit reached at admission.
    expect(
      (
        await admin('/spend_limits', {
          scope: { type: 'user', user_id: member.id },
          amount: '80',
          period: 'monthly',
        })
      ).status,
    ).toBe(200);
    // The write applied on this instance before it answered: the very next call is refused.
    expect((await spend(400)).status).toBe(429);
    await receiver.waitFor((r) => r.some((e) => e.event.data.threshold_percent === 100));
    const hundred = receiver.received.filter((r) => r.event.data.threshold_percent === 100);
    expect(hundred.map((r) => [r.event.data.amount, r.verified])).toEqual([['80', true]]);
    const out = await statusline({ ANTHROPIC_BASE_URL: stack.gateway.url, KEYGATE_KEY: key });
    expect(out.stdout).toMatch(/^\$0\.81 of \$0\.80 monthly \(101%\) · resets /);
  });
});

describe('the statusline command when the gateway cannot answer', () => {
  let silent: Server;
  beforeAll(async () => {
    // Takes the connection and never answers.
    silent = createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    silent.closeAllConnections();
    await new Promise((r) => silent.close(r));
  });

  it('prints a short fallback at once when nothing listens', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const out = await statusline({ ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`, KEYGATE_KEY: key });
    expect(out).toMatchObject({ code: 0, stdout: 'Keygate: spend unavailable\n' });
  });

  it('gives up after its timeout when the gateway hangs', async () => {
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const out = await statusline({ ANTHROPIC_BASE_URL: url, KEYGATE_KEY: key }, ['--timeout-ms', '300']);
    expect(out).toMatchObject({ code: 0, stdout: 'Keygate: spend unavailable\n' });
    // Node's start and the build check take most of it; the wait itself is the 300 ms.
    expect(out.ms).toBeLessThan(10_000);
  });

  it('says what is missing when it has no gateway or key', async () => {
    expect((await statusline({})).stdout).toBe('Keygate: set ANTHROPIC_BASE_URL\n');
    expect((await statusline({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:1' })).stdout).toBe(
      'Keygate: set a key\n',
    );
  });
});
