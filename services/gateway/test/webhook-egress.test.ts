import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EGRESS_BLOCKED } from '../src/lib/egress';
import { newId } from '../src/lib/ids';
import { api, startStack, type SeededAccount, type Stack } from './harness';
import { ALLOW_LOOPBACK_RECEIVERS, startReceiver, type Receiver } from './webhook-receiver';

const FAST = {
  KEYGATE_WEBHOOK_POLL_MS: '50',
  KEYGATE_WEBHOOK_RETRY_MS: '100',
  KEYGATE_WEBHOOK_MAX_ATTEMPTS: '5',
};

/** Waits until the endpoint's deliveries satisfy `check` (the worker writes them). */
async function deliveriesOf(stack: Stack, id: string, check: (rows: any[]) => boolean) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const rows = await stack.gateway.store.db
      .sql`select status, attempts, last_status, last_error from webhook_deliveries where endpoint_id = ${id} order by seq`;
    if (check(rows)) return rows;
    if (Date.now() > deadline) throw new Error(`deliveries: ${JSON.stringify(rows)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('webhook egress policy (strict: the default)', () => {
  let stack: Stack;
  let acct: SeededAccount;
  let receiver: Receiver;
  beforeAll(async () => {
    stack = await startStack({ ...FAST, KEYGATE_WEBHOOK_MAX_ENDPOINTS: '3' });
    acct = await stack.seedAccount();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await stack?.close();
  });

  const create = (url: string, account = acct) =>
    api(stack.gateway.url, '/v1/organizations/webhooks', {
      key: account.adminKey,
      body: { url, events: ['billing.notice'] },
    });

  it.each([
    'http://127.0.0.1:9/hooks',
    'http://2130706433/',
    'http://0x7f000001/',
    'http://0.0.0.0/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://localhost:8080/',
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.5/',
    'http://100.64.1.1/',
    'http://[fd00::1]/',
  ])('refuses to register %s, saying nothing about the target', async (url) => {
    const res = await create(url);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('error');
    expect(res.body.error.message).toBe(`url: ${EGRESS_BLOCKED}.`);
  });

  it('refuses to move an endpoint onto a private address', async () => {
    const other = await stack.seedAccount();
    const made = await create('https://93.184.215.14/hooks', other);
    expect(made.status).toBe(201);
    const moved = await api(stack.gateway.url, `/v1/organizations/webhooks/${made.body.id}`, {
      key: other.adminKey,
      body: { url: 'http://192.168.0.1/' },
    });
    expect(moved.status).toBe(400);
    expect(moved.body.error.message).toBe(`url: ${EGRESS_BLOCKED}.`);
  });

  it('caps the endpoints of an account (KEYGATE_WEBHOOK_MAX_ENDPOINTS)', async () => {
    const capped = await stack.seedAccount();
    const made = await Promise.all([1, 2, 3, 4, 5].map((n) => create(`https://93.184.215.${n}/`, capped)));
    expect(made.filter((r) => r.status === 201)).toHaveLength(3);
    const refused = made.filter((r) => r.status !== 201);
    expect(refused.map((r) => r.status)).toEqual([400, 400]);
    expect(refused[0]!.body.error.message).toMatch(/3 webhook endpoints, the most it may have/);
  });

  it('blocks a delivery to an endpoint stored before the policy: no retry, no byte sent, nothing about the target', async () => {
    // A row as an earlier version let it in: straight into the store, past the API's check.
    const id = newId('whk');
    await stack.gateway.store.alerts.createEndpoint(
      {
        id,
        accountId: acct.id,
        url: receiver.url,
        description: null,
        events: ['billing.notice'],
        status: 'active',
        errorRateThreshold: null,
        errorRateWindowSeconds: null,
        errorRateMinCalls: 10,
        createdBy: null,
        secretSealed: stack.deps.box.seal('whsec_x', { purpose: 'webhook-secret', row: id }),
      },
      { actor: 'test', action: 'webhook.create', targetId: id },
    );
    await stack.gateway.store.alerts.emit({ accountId: acct.id, type: 'billing.notice', data: { n: 1 } });
    const rows = await deliveriesOf(stack, id, (r) => r.length === 1 && r[0].status === 'failed');
    expect(rows[0]).toEqual({ status: 'failed', attempts: 1, last_status: null, last_error: EGRESS_BLOCKED });
    expect(receiver.received).toHaveLength(0);
    const listed = await api(stack.gateway.url, `/v1/organizations/webhooks/${id}/deliveries`, {
      key: acct.adminKey,
    });
    expect(listed.body.data[0]).toMatchObject({
      status: 'failed',
      last_status: null,
      last_error: EGRESS_BLOCKED,
    });
  });
});

describe('webhook endpoints on an allowed loopback receiver', () => {
  let stack: Stack;
  let acct: SeededAccount;
  const receivers: Receiver[] = [];
  beforeAll(async () => {
    stack = await startStack({ ...FAST, ...ALLOW_LOOPBACK_RECEIVERS });
    acct = await stack.seedAccount();
  });
  afterAll(async () => {
    for (const r of receivers) await r.close();
    await stack?.close();
  });

  it("the operator's allow-list lets a self-hoster's receiver in", async () => {
    const r = await startReceiver();
    receivers.push(r);
    const made = await api(stack.gateway.url, '/v1/organizations/webhooks', {
      key: acct.adminKey,
      body: { url: r.url, events: ['billing.notice'] },
    });
    expect(made.status).toBe(201);
    r.useSecret(made.body.secret);
    await stack.gateway.store.alerts.emit({ accountId: acct.id, type: 'billing.notice', data: { n: 1 } });
    await r.waitFor((got) => got.length === 1);
    expect(r.received[0]!.verified).toBe(true);
  });

  it('disabling an endpoint stops the deliveries already queued for it', async () => {
    const r = await startReceiver({ alwaysFail: true });
    receivers.push(r);
    const other = await stack.seedAccount();
    const made = await api(stack.gateway.url, '/v1/organizations/webhooks', {
      key: other.adminKey,
      body: { url: r.url, events: ['billing.notice'] },
    });
    const id = made.body.id as string;
    r.useSecret(made.body.secret);
    for (let n = 1; n <= 3; n++)
      await stack.gateway.store.alerts.emit({ accountId: other.id, type: 'billing.notice', data: { n } });
    await r.waitFor((got) => got.length >= 1);
    const disabled = await api(stack.gateway.url, `/v1/organizations/webhooks/${id}`, {
      key: other.adminKey,
      body: { status: 'disabled' },
    });
    expect(disabled.status).toBe(200);
    const rows = await deliveriesOf(stack, id, (rs) => rs.every((d) => d.status !== 'pending'));
    expect(rows.map((d) => [d.status, d.last_error])).toEqual([
      ['failed', 'endpoint disabled'],
      ['failed', 'endpoint disabled'],
      ['failed', 'endpoint disabled'],
    ]);
    // Nothing of this endpoint is claimable any more, on any instance.
    const claimed = await stack.gateway.store.alerts.claim(100, 1_000);
    expect(claimed.filter((d) => d.endpointId === id)).toEqual([]);
  });
});
