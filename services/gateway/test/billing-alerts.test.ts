import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startStack, type SeededAccount, type Stack } from './harness';
import { ALLOW_LOOPBACK_RECEIVERS, startReceiver, type Receiver } from './webhook-receiver';

const DAY = 86_400_000;
const TOKEN = 'operator-token-0123456789';
let stack: Stack;
let now = Date.now();
const receivers: Receiver[] = [];
const op = (path: string, body: unknown) =>
  api(stack.gateway.url, `/operator/v1${path}`, { bearer: TOKEN, body });
const runClock = async () => expect((await op('/billing/clock', {})).status).toBe(200);

beforeAll(async () => {
  stack = await startStack(
    {
      ...ALLOW_LOOPBACK_RECEIVERS,
      KEYGATE_PAYMENT_GRACE_DAYS: '3',
      KEYGATE_WEBHOOK_POLL_MS: '50',
      KEYGATE_WEBHOOK_RETRY_MS: '100',
      KEYGATE_BILLING_CLOCK_MS: '3600000',
    },
    { clock: () => now },
  );
});
afterAll(async () => {
  for (const r of receivers) await r.close();
  await stack?.close();
});

/** An account with a webhook endpoint subscribed to `billing.notice` only. */
async function watched(
  opts: { plan?: 'solo' | 'team'; trialDays?: number } = {},
): Promise<{ acct: SeededAccount; receiver: Receiver }> {
  const acct = await stack.seedAccount(opts);
  const receiver = await startReceiver();
  receivers.push(receiver);
  const res = await api(stack.gateway.url, '/v1/organizations/webhooks', {
    key: acct.adminKey,
    body: { url: receiver.url, events: ['billing.notice'] },
  });
  expect(res.status).toBe(201);
  receiver.useSecret(res.body.secret);
  return { acct, receiver };
}

const outbox = (accountId: string) =>
  stack.gateway.store.db.sql<
    { type: string; kind: string }[]
  >`select type, data->>'kind' as kind from alert_events where account_id = ${accountId} order by created_at, id`;

describe('billing notices as alert webhooks', () => {
  it('the trial notice three days ahead reaches a subscribed endpoint once, signed; the trial ending without payment follows', async () => {
    now = Date.now();
    const { acct, receiver } = await watched({ plan: 'solo', trialDays: 10 });
    const trialEnd = (await stack.gateway.store.accounts.get(acct.id))!.trialEndsAt!.getTime();

    now = trialEnd - 3 * DAY - 1;
    await runClock();
    expect(await outbox(acct.id)).toEqual([]);

    now = trialEnd - 3 * DAY;
    await runClock();
    await runClock();
    await receiver.waitFor((r) => r.length >= 1);
    const [first] = receiver.received;
    expect(first!.verified).toBe(true);
    expect(first!.event).toMatchObject({
      type: 'billing.notice',
      account_id: acct.id,
      data: {
        kind: 'trial_will_end',
        state: 'trialing',
        due_at: new Date(trialEnd).toISOString(),
        cause: 'clock',
        billing_page: '/dashboard/billing',
      },
    });
    expect(first!.event.data.message).toContain(new Date(trialEnd).toISOString().slice(0, 10));

    now = trialEnd;
    await runClock();
    await receiver.waitFor((r) => r.length >= 2);
    expect(receiver.received[1]!.event.data).toMatchObject({
      kind: 'paused',
      state: 'paused',
      cause: 'clock: trial_ended',
      due_at: new Date(trialEnd).toISOString(),
    });
    expect(receiver.received[1]!.event.data.message).toMatch(/paused.*ask your Keygate operator/);
    // The second clock run three days ahead wrote no second notice, nor a second event.
    expect((await outbox(acct.id)).map((e) => e.kind)).toEqual(['trial_will_end', 'paused']);
    expect(receiver.received.map((r) => r.event.data.kind)).toEqual(['trial_will_end', 'paused']);
  });

  it('a paid period running out: past_due when it ends, unpaid when the grace period is over, each an event in order', async () => {
    now = Date.now();
    const { acct, receiver } = await watched({ plan: 'team', trialDays: 0 });
    const until = now + 20 * DAY;
    expect(
      (await op(`/accounts/${acct.id}/mark_paid`, { until: new Date(until).toISOString() })).status,
    ).toBe(200);
    // Becoming active is good news: no notice.
    expect(await outbox(acct.id)).toEqual([]);

    now = until;
    await runClock();
    now = until + 3 * DAY;
    await runClock();
    await receiver.waitFor((r) => r.length >= 2);
    expect(receiver.received.map((r) => [r.event.data.kind, r.verified])).toEqual([
      ['past_due', true],
      ['unpaid', true],
    ]);
    expect(receiver.received[0]!.event.data.message).toMatch(/overdue.*3 days/);
    expect(receiver.received[1]!.event.data.message).toMatch(/paid period ended/);
  });

  it('an endpoint that did not subscribe to billing.notice gets none; the cancellation is queued all the same', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'team', trialDays: 0 });
    const other = await startReceiver();
    receivers.push(other);
    const res = await api(stack.gateway.url, '/v1/organizations/webhooks', {
      key: acct.adminKey,
      body: { url: other.url, events: ['budget.threshold_crossed'] },
    });
    expect(res.status).toBe(201);
    // Cancel during the (ended) trial: canceled, an event in the outbox, but not for this endpoint.
    expect(
      (await api(stack.gateway.url, '/v1/organizations/billing/cancel', { key: acct.adminKey, body: {} }))
        .status,
    ).toBe(200);
    expect((await outbox(acct.id)).map((e) => e.kind)).toEqual(['canceled']);
    const [deliveries] = await stack.gateway.store.db.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries d join alert_events e on e.id = d.event_id where e.account_id = ${acct.id}`;
    expect(deliveries!.n).toBe(0);
    expect(other.received).toEqual([]);
  });
});
