import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callModel, startStack, type SeededAccount, type Stack } from './harness';
import { startStripeStandIn, type StripeStandIn } from './stripe-stand-in';
import { waitFor } from './kit/wait';

const DAY = 86_400_000;
const TOKEN = 'operator-token-0123456789';
let stack: Stack;
let stripe: StripeStandIn;
let now = Date.now();
const url = () => stack.gateway.url;
const op = (path: string, body?: unknown) =>
  api(url(), `/operator/v1${path}`, { bearer: TOKEN, ...(body !== undefined ? { body } : {}) });
const admin = (acct: SeededAccount, path: string, body?: unknown) =>
  api(url(), `/v1/organizations${path}`, { key: acct.adminKey, ...(body !== undefined ? { body } : {}) });
const view = async (acct: SeededAccount) => (await admin(acct, '/billing/subscription')).body;

async function deliver(e: { body: string; signature: string }, base = url()) {
  const res = await fetch(`${base}/billing/stripe/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': e.signature },
    body: e.body,
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** An account that went through Checkout: a live key, and its Stripe subscription (active, paid by card). */
async function subscribed(plan: 'solo' | 'team' | 'scale' = 'team') {
  const acct = await stack.seedAccount({ plan, trialDays: 0 });
  const key = (await admin(acct, '/api_keys', { name: 'app' })).body.key as string;
  const checkout = await admin(acct, '/billing/checkout', {});
  expect(checkout.status).toBe(200);
  const { session, subscription } = stripe.completeCheckout(checkout.body.id, 'active');
  expect((await deliver(stripe.event('checkout.session.completed', session))).body.outcome).toBe('applied');
  return { acct, key, sub: subscription };
}

const invoiceObject = (sub: Record<string, any>, status: 'paid' | 'open') => ({
  id: `in_${Math.random().toString(36).slice(2, 12)}`,
  object: 'invoice',
  customer: sub.customer,
  status,
  currency: 'eur',
  amount_due: 1900,
  parent: {
    type: 'subscription_details',
    subscription_details: { subscription: sub.id, metadata: sub.metadata },
  },
});

beforeAll(async () => {
  stripe = await startStripeStandIn();
  stack = await startStack({ ...stripe.env, KEYGATE_PAYMENT_GRACE_DAYS: '3' }, { clock: () => now });
  for (const id of ['solo', 'team', 'scale'])
    expect((await op(`/plans/${id}`, { stripe_price_id: `price_${id}` })).status).toBe(200);
});
afterAll(async () => {
  await stack?.close();
  await stripe?.close();
});

describe('Checkout and the portal (stand-in Stripe on loopback)', () => {
  it('starts a subscription through Checkout; the completed session makes it active', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'team', trialDays: 0 });
    await admin(acct, '/users', { email: 'two@stripe.test' });
    const key = (await admin(acct, '/api_keys', { name: 'app' })).body.key;
    const refused = await callModel(url(), key);
    expect(refused.status).toBe(402);
    // With checkout on this gateway, the admin is sent to it, not to the operator.
    expect(refused.body.error.message).toMatch(/billing page \(\/dashboard\/billing\).*subscribe/);
    expect(refused.body.error.message).not.toMatch(/operator/);

    const checkout = await admin(acct, '/billing/checkout', { plan: 'scale' });
    expect(checkout.body).toMatchObject({
      type: 'checkout_session',
      plan: 'scale',
      seats: 2,
      url: expect.stringContaining(stripe.url),
    });
    const created = stripe.requests.find(
      (r) => r.path === '/v1/checkout/sessions' && r.form.client_reference_id === acct.id,
    )!;
    expect(created.form).toMatchObject({
      mode: 'subscription',
      'line_items[0][price]': 'price_scale',
      'line_items[0][quantity]': '2',
      'subscription_data[metadata][account_id]': acct.id,
    });
    expect(created.form.success_url).toMatch(/\/dashboard\/billing\?checkout=success$/);
    expect((await fetch(checkout.body.url)).status).toBe(200);

    const { session, subscription } = stripe.completeCheckout(checkout.body.id);
    const applied = await deliver(stripe.event('checkout.session.completed', session));
    expect(applied).toMatchObject({ status: 200, body: { received: true, outcome: 'applied' } });
    expect(
      stripe.requests.some((r) => r.method === 'GET' && r.path === `/v1/subscriptions/${subscription.id}`),
    ).toBe(true);
    expect(await view(acct)).toMatchObject({
      state: 'active',
      calls_allowed: true,
      plan: { id: 'scale' },
      payment: { provider: 'stripe', has_payment_method: true },
    });
    expect((await callModel(url(), key)).status).toBe(200);

    const portal = await admin(acct, '/billing/portal', {});
    expect(portal.body).toMatchObject({ type: 'portal_session', url: expect.stringContaining(stripe.url) });
    // Plan changes of a Stripe subscription go through Stripe.
    expect((await admin(acct, '/billing/plan', { plan: 'team' })).body.error.message).toMatch(
      /customer portal/,
    );
  });
});

describe('webhooks', () => {
  it('a badly signed event is refused with 400 and changes nothing; the same event well signed applies', async () => {
    const { acct, sub } = await subscribed();
    const canceled = stripe.event('customer.subscription.deleted', { ...sub, status: 'canceled' });
    for (const signature of [
      canceled.signature.replace(/v1=[0-9a-f]{4}/, 'v1=0000'),
      't=1,v1=deadbeef',
      '',
    ]) {
      const refused = await deliver({ body: canceled.body, signature });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    }
    const tampered = await deliver({
      body: canceled.body.replace('"canceled"', '"active"'),
      signature: canceled.signature,
    });
    expect(tampered.status).toBe(400);
    expect(await view(acct)).toMatchObject({ state: 'active', recorded_state: 'active' });
    expect((await deliver(canceled)).body.outcome).toBe('applied');
    expect((await view(acct)).state).toBe('canceled');
  });

  it('a duplicate or replayed event is applied once', async () => {
    const { acct, sub } = await subscribed();
    const failed = stripe.event('invoice.payment_failed', invoiceObject(sub, 'open'));
    const first = await deliver(failed);
    const again = await deliver(failed);
    const peer = await stack.startPeer();
    const replayed = await deliver(failed, peer.url);
    expect([first.body.outcome, again.body.outcome, replayed.body.outcome]).toEqual([
      'applied',
      'duplicate',
      'duplicate',
    ]);
    const transitions = (await view(acct)).transitions.filter((t: any) => t.cause_ref === failed.id);
    expect(transitions).toHaveLength(1);
    expect(transitions[0]).toMatchObject({ from: 'active', to: 'past_due', cause: 'webhook' });
  });

  it('an event older than the last applied is not trusted: the subscription is fetched from Stripe', async () => {
    const { acct, sub } = await subscribed();
    const t = Math.floor(Date.now() / 1000);
    const newer = stripe.event(
      'customer.subscription.updated',
      { ...sub, status: 'past_due' },
      { created: t },
    );
    const older = stripe.event(
      'customer.subscription.updated',
      { ...sub, status: 'active' },
      { created: t - 60 },
    );
    stripe.subscriptions.set(sub.id, { ...sub, status: 'past_due' });
    const fetchesBefore = stripe.requests.filter((r) => r.path === `/v1/subscriptions/${sub.id}`).length;
    expect((await deliver(newer)).body.outcome).toBe('applied');
    expect((await deliver(older)).body.outcome).toBe('applied');
    expect(stripe.requests.filter((r) => r.path === `/v1/subscriptions/${sub.id}`).length).toBe(
      fetchesBefore + 1,
    );
    const v = await view(acct);
    expect(v.recorded_state).toBe('past_due');
    expect(v.transitions.map((x: any) => x.to)).not.toContain('trialing');
    expect(v.transitions.filter((x: any) => x.from === 'past_due')).toEqual([]);
  });

  it('a failed payment: calls go on through the grace period, then 402; paying restores them on another instance within a second', async () => {
    now = Date.now();
    const { acct, key, sub } = await subscribed('solo');
    const peer = await stack.startPeer();
    stripe.subscriptions.set(sub.id, { ...sub, status: 'past_due' });
    expect(
      (await deliver(stripe.event('invoice.payment_failed', invoiceObject(sub, 'open')))).body.outcome,
    ).toBe('applied');
    const since = Date.parse((await view(acct)).past_due_since);
    now = since + 3 * DAY - 1;
    expect((await callModel(peer.url, key)).status).toBe(200);
    now = since + 3 * DAY;
    const refused = await callModel(peer.url, key);
    expect(refused.status).toBe(402);
    expect(refused.body.error.message).toMatch(/payment failed .* grace period is over/);
    expect((await admin(acct, '/me')).status).toBe(200);

    stripe.subscriptions.set(sub.id, { ...sub, status: 'active' });
    const started = performance.now();
    expect((await deliver(stripe.event('invoice.paid', invoiceObject(sub, 'paid')))).body.outcome).toBe(
      'applied',
    );
    await waitFor(async () => (await callModel(peer.url, key)).status === 200, {
      timeout: 5_000,
      interval: 20,
      what: 'the peer to serve the key',
    });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect((await view(acct)).transitions.slice(-2).map((x: any) => [x.from, x.to, x.cause])).toEqual([
      ['active', 'past_due', 'webhook'],
      ['past_due', 'active', 'webhook'],
    ]);
  });

  it('cancel at period end arrives from Stripe: calls until the end, then 402; deletion confirms it', async () => {
    now = Date.now();
    const { acct, key, sub } = await subscribed();
    const end = sub.items.data[0].current_period_end * 1000;
    await deliver(stripe.event('customer.subscription.updated', { ...sub, cancel_at_period_end: true }));
    expect((await view(acct)).cancel_at_period_end).toBe(true);
    now = end - 1;
    expect((await callModel(url(), key)).status).toBe(200);
    now = end;
    expect((await callModel(url(), key)).status).toBe(402);
    await deliver(
      stripe.event('customer.subscription.deleted', {
        ...sub,
        status: 'canceled',
        cancel_at_period_end: true,
      }),
    );
    expect((await view(acct)).recorded_state).toBe('canceled');
    expect((await callModel(url(), key)).body.error.message).toMatch(/canceled/);
  });

  it('trial_will_end records the notice; paused and resumed drive the state', async () => {
    now = Date.now();
    const { acct, key, sub } = await subscribed();
    const trialEnd = Math.floor(Date.now() / 1000) + 3 * 86_400;
    await deliver(
      stripe.event('customer.subscription.trial_will_end', {
        ...sub,
        status: 'trialing',
        trial_end: trialEnd,
        default_payment_method: null,
      }),
    );
    expect((await view(acct)).notices).toEqual([
      expect.objectContaining({ kind: 'trial_will_end', due_at: new Date(trialEnd * 1000).toISOString() }),
    ]);
    await deliver(stripe.event('customer.subscription.paused', { ...sub, status: 'paused' }));
    expect((await callModel(url(), key)).body.error.message).toMatch(/paused/);
    await deliver(stripe.event('customer.subscription.resumed', { ...sub, status: 'active' }));
    expect((await callModel(url(), key)).status).toBe(200);
  });
});
