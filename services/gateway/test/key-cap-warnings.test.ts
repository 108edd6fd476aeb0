import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statusLine } from '../src/cli/statusline-command';
import { SpendNotice, spendWarnings } from '../src/dashboard/components/spend-notice';
import { api, startStack, type SeededAccount, type Stack } from './harness';
import { ALLOW_LOOPBACK_RECEIVERS, startReceiver, type Receiver } from './webhook-receiver';

/**
 * A key's own monthly spend cap warns at 50, 80 and 100% through the path spend limits warn by
 * (issue 31): the same webhook event, once per threshold, and the status line's endpoint.
 */
let stack: Stack;
let acme: SeededAccount;
let receiver: Receiver;
let key: string;
let keyId: string;

const admin = (path: string, body?: unknown) =>
  api(stack.gateway.url, `/v1/organizations${path}`, { key: acme.adminKey, body });

/** An Opus 4.5 call of `tokens` output tokens (400 cost one cent), then its charge on the ledger. */
async function charged(tokens: number) {
  const res = await api(stack.gateway.url, '/v1/messages', {
    bearer: key,
    headers: { 'x-emulator-output-tokens': String(tokens) },
    body: { model: 'claude-opus-4-5', max_tokens: tokens, messages: [{ role: 'user', content: 'hi' }] },
  });
  await stack.gateway.writer.flush();
  await stack.gateway.limits.admission.settled();
  return res;
}

beforeAll(async () => {
  stack = await startStack({ KEYGATE_WEBHOOK_POLL_MS: '50', ...ALLOW_LOOPBACK_RECEIVERS });
  acme = await stack.seedAccount({ name: 'Key caps' });
  receiver = await startReceiver();
  const hook = await admin('/webhooks', { url: receiver.url, events: ['spend_limit.threshold_crossed'] });
  expect(hook.status).toBe(201);
  receiver.useSecret(hook.body.secret);
  const created = await admin('/api_keys', { name: 'capped app', limits: { monthly_spend_cap_cents: 100 } });
  expect([200, 201], JSON.stringify(created.body)).toContain(created.status);
  key = created.body.key;
  keyId = created.body.id;
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await stack?.close();
});

describe("a key's own monthly spend cap", () => {
  it('warns at 50% and 80% by the spend-limit webhook, once each', async () => {
    expect((await charged(20_000)).status).toBe(200);
    await receiver.waitFor((r) => r.length >= 1);
    expect(receiver.received[0]!.verified).toBe(true);
    expect(receiver.received[0]!.event).toMatchObject({
      type: 'spend_limit.threshold_crossed',
      data: {
        source: 'api_key_cap',
        spend_limit_id: null,
        api_key_id: keyId,
        user_id: null,
        period: 'monthly',
        threshold_percent: 50,
        amount: '100',
      },
    });
    expect((await charged(12_000)).status).toBe(200);
    await receiver.waitFor((r) => r.length >= 2);
    expect(receiver.received.map((r) => r.event.data.threshold_percent)).toEqual([50, 80]);
    // A cent more crosses nothing new.
    expect((await charged(400)).status).toBe(200);
    const [row] = await stack.gateway.store.db.sql<{ n: number }[]>`
      select count(*)::int as n from alert_events where account_id = ${acme.id} and type = 'spend_limit.threshold_crossed'`;
    expect(row?.n).toBe(2);
  });

  it('shows on the status line as the key cap it is', async () => {
    const status = await api(stack.gateway.url, '/keygate/v1/spend', { bearer: key });
    expect(status.status).toBe(200);
    expect(status.body.limits).toHaveLength(1);
    expect(status.body.limits[0]).toMatchObject({
      source: 'api_key_cap',
      spend_limit_id: null,
      period: 'monthly',
      amount: '100',
    });
    expect(status.body.limits[0].percent).toBeGreaterThanOrEqual(80);
    expect(statusLine(status.body)).toMatch(/^\$0\.8\d of \$1\.00 monthly key cap \(8\d%\) · resets /);
  });

  it("shows in the dashboard's spend notice, for the account's admin", async () => {
    const deps = {
      store: stack.gateway.store,
      clock: () => Date.now(),
      prices: stack.deps.prices,
    } as unknown as Parameters<typeof spendWarnings>[0];
    const warnings = await spendWarnings(deps, acme.id, null);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ who: 'capped app', period: 'monthly', limitCents: 100 });
    const html = String(SpendNotice({ warnings, own: false }));
    expect(html).toMatch(
      /capped app has used 8\d% of their monthly spend cap of key capped app: \$0\.8\d of \$1\.00/,
    );
  });
});
