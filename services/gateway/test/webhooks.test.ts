import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callModel, startStack, type SeededAccount, type Stack } from './harness';
import { waitFor } from './kit/wait';
import { ALLOW_LOOPBACK_RECEIVERS, startReceiver, type Receiver } from './webhook-receiver';

const FAST = {
  KEYGATE_WEBHOOK_POLL_MS: '50',
  KEYGATE_WEBHOOK_RETRY_MS: '100',
  KEYGATE_WEBHOOK_MAX_ATTEMPTS: '3',
  KEYGATE_ERROR_RATE_CHECK_MS: '100',
  ...ALLOW_LOOPBACK_RECEIVERS,
};

describe('alert webhooks', () => {
  let stack: Stack;
  let acct: SeededAccount;
  const receivers: Receiver[] = [];
  beforeAll(async () => {
    stack = await startStack(FAST);
    acct = await stack.seedAccount();
  });
  afterAll(async () => {
    for (const r of receivers) await r.close();
    await stack?.close();
  });

  async function endpoint(
    events: string[],
    opts: { failFirst?: number; alwaysFail?: boolean; error_rate?: object; account?: SeededAccount } = {},
  ) {
    const r = await startReceiver(opts);
    receivers.push(r);
    const res = await api(stack.gateway.url, '/v1/organizations/webhooks', {
      key: (opts.account ?? acct).adminKey,
      body: { url: r.url, events, ...(opts.error_rate ? { error_rate: opts.error_rate } : {}) },
    });
    expect(res.status).toBe(201);
    r.useSecret(res.body.secret);
    return { receiver: r, id: res.body.id as string, secret: res.body.secret as string };
  }

  /** Every delivery of the endpoint once the worker is done with it (none pending): nothing more will be sent. */
  const settledDeliveries = (account: SeededAccount, id: string) =>
    waitFor(
      async () => {
        const { data } = (
          await api(stack.gateway.url, `/v1/organizations/webhooks/${id}/deliveries`, {
            key: account.adminKey,
          })
        ).body;
        return data.length > 0 && data.every((d: any) => d.status !== 'pending') && (data as any[]);
      },
      { timeout: 10_000, interval: 50, what: `the deliveries of ${id} to settle` },
    );

  const notice = (accountId: string, n: number) =>
    stack.gateway.store.alerts.emit({
      accountId,
      type: 'billing.notice',
      data: { kind: 'trial_will_end', n },
    });

  it('shows the secret once: never in a listing, a lookup or a log line', async () => {
    const acct2 = await stack.seedAccount();
    const { receiver, id, secret } = await endpoint(['billing.notice'], { account: acct2 });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9]{32}$/);
    await notice(acct2.id, 1);
    await receiver.waitFor(() => receiver.accepted().length === 1);
    const list = await api(stack.gateway.url, '/v1/organizations/webhooks', { key: acct2.adminKey });
    const one = await api(stack.gateway.url, `/v1/organizations/webhooks/${id}`, { key: acct2.adminKey });
    expect(list.body.data).toEqual([
      expect.objectContaining({ id, url: receiver.url, events: ['billing.notice'], status: 'active' }),
    ]);
    for (const text of [JSON.stringify(list.body), JSON.stringify(one.body), ...stack.logs])
      expect(text).not.toContain(secret);
    expect(receiver.received[0]!.verified).toBe(true);
  });

  it('signs each delivery, retries failures with growing delays, and keeps the order per endpoint', async () => {
    const acct3 = await stack.seedAccount();
    const { receiver, id } = await endpoint(['billing.notice'], { account: acct3, failFirst: 2 });
    for (let n = 1; n <= 3; n++) await notice(acct3.id, n);
    await receiver.waitFor(() => receiver.accepted().length === 3);
    const seen = receiver.received.map((r) => r.event.data.n);
    // The first event is retried twice before it lands; nothing behind it overtakes it.
    expect(seen).toEqual([1, 1, 1, 2, 3]);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    const first = receiver.received.slice(0, 3);
    expect(new Set(first.map((r) => r.event.id)).size).toBe(1);
    expect(first.map((r) => r.headers['keygate-event-id'])).toEqual(first.map((r) => r.event.id));
    expect(first.map((r) => r.headers['keygate-delivery-attempt'])).toEqual(['1', '2', '3']);
    // Backoff: 100 ms, then 200 ms.
    expect(first[1]!.at - first[0]!.at).toBeGreaterThanOrEqual(90);
    expect(first[2]!.at - first[1]!.at).toBeGreaterThanOrEqual(190);
    // The receiver answers before the worker commits "delivered": read until the last delivery is marked.
    const deliveries = await settledDeliveries(acct3, id);
    expect(deliveries.map((d: any) => [d.status, d.attempts])).toEqual([
      ['delivered', 1],
      ['delivered', 1],
      ['delivered', 3],
    ]);
  });

  it('marks a delivery failed after the last attempt, then moves on to the next', async () => {
    const acct4 = await stack.seedAccount();
    const { receiver, id } = await endpoint(['billing.notice'], { account: acct4, alwaysFail: true });
    await notice(acct4.id, 1);
    await notice(acct4.id, 2);
    await receiver.waitFor((r) => r.length === 6);
    const deliveries = await settledDeliveries(acct4, id);
    expect(receiver.received.map((r) => r.event.data.n)).toEqual([1, 1, 1, 2, 2, 2]);
    expect(deliveries.map((d: any) => [d.status, d.attempts, d.last_status, d.last_error])).toEqual([
      ['failed', 3, 500, 'HTTP 500'],
      ['failed', 3, 500, 'HTTP 500'],
    ]);
  });

  it('two instances deliver every event once, in order (claims skip locked rows)', async () => {
    const peer = await stack.startPeer(FAST);
    const acct5 = await stack.seedAccount();
    const { receiver, id } = await endpoint(['billing.notice'], { account: acct5 });
    for (let n = 1; n <= 12; n++) await notice(acct5.id, n);
    await receiver.waitFor((r) => r.length >= 12);
    expect(await settledDeliveries(acct5, id)).toHaveLength(12);
    expect(receiver.received.map((r) => r.event.data.n)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(new Set(receiver.received.map((r) => r.event.id)).size).toBe(12);
    expect(peer.url).not.toBe(stack.gateway.url);
  });

  it('a rotated key used after its grace period raises api_key.used_after_rotation', async () => {
    const acct6 = await stack.seedAccount();
    const { receiver, id } = await endpoint(['api_key.used_after_rotation'], { account: acct6 });
    const key = (
      await api(stack.gateway.url, '/v1/organizations/api_keys', {
        key: acct6.adminKey,
        body: { name: 'old app' },
      })
    ).body;
    expect((await callModel(stack.gateway.url, key.key)).status).toBe(200);
    const rotated = await api(stack.gateway.url, `/v1/organizations/api_keys/${key.id}/rotate`, {
      key: acct6.adminKey,
      body: { grace_period_seconds: 0 },
    });
    expect(rotated.status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await callModel(stack.gateway.url, key.key)).status).toBe(401);
    await receiver.waitFor((r) => r.length === 1);
    expect(await settledDeliveries(acct6, id)).toHaveLength(1);
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.event).toMatchObject({
      type: 'api_key.used_after_rotation',
      account_id: acct6.id,
      data: { api_key_id: key.id, api_key_name: 'old app', old_secret_expired_at: expect.any(String) },
    });
    expect((await callModel(stack.gateway.url, rotated.body.key)).status).toBe(200);
  });

  it('an error rate at or above the threshold alerts the endpoint once while it stays there', async () => {
    const acct7 = await stack.seedAccount();
    const { receiver, id } = await endpoint(['error_rate.exceeded'], {
      account: acct7,
      error_rate: { threshold_percent: 50, window_seconds: 60, min_calls: 4 },
    });
    const key = (
      await api(stack.gateway.url, '/v1/organizations/api_keys', { key: acct7.adminKey, body: {} })
    ).body.key;
    expect((await callModel(stack.gateway.url, key)).status).toBe(200);
    // Refused by the gateway's validation: recorded as calls that ended in an error.
    const bad = () =>
      api(stack.gateway.url, '/v1/messages', {
        bearer: key,
        body: { model: 'claude-opus-4-5', messages: [] },
      });
    for (let i = 0; i < 3; i++) expect((await bad()).status).toBe(400);
    await stack.gateway.writer.flush();
    await receiver.waitFor((r) => r.length === 1);
    for (let i = 0; i < 2; i++) await bad();
    await stack.gateway.writer.flush();
    expect(await settledDeliveries(acct7, id)).toHaveLength(1);
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.event.data).toMatchObject({
      calls: 4,
      errors: 3,
      error_rate: 0.75,
      threshold: 0.5,
      window_seconds: 60,
    });
  });

  it('refuses URLs that are not http(s), and unknown event types', async () => {
    for (const url of ['ftp://127.0.0.1/x', 'javascript:alert(1)', 'file:///etc/passwd', 'not a url']) {
      const res = await api(stack.gateway.url, '/v1/organizations/webhooks', {
        key: acct.adminKey,
        body: { url, events: ['billing.notice'] },
      });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/^url: must be an http:\/\/ or https:\/\/ URL/);
    }
    const res = await api(stack.gateway.url, '/v1/organizations/webhooks', {
      key: acct.adminKey,
      body: { url: 'http://127.0.0.1:9/x', events: ['budget.exploded'] },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/^events\[0\]/);
  });
});
