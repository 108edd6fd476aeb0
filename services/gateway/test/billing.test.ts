import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callModel, startStack, type SeededAccount, type Stack } from './harness';
import { waitFor } from './kit/wait';

const DAY = 86_400_000;
const TOKEN = 'operator-token-0123456789';
let stack: Stack;
let now = Date.now();
const url = () => stack.gateway.url;
const op = (path: string, body?: unknown) =>
  api(url(), `/operator/v1${path}`, { bearer: TOKEN, ...(body !== undefined ? { body } : {}) });
const admin = (acct: SeededAccount, path: string, body?: unknown) =>
  api(url(), `/v1/organizations${path}`, { key: acct.adminKey, ...(body !== undefined ? { body } : {}) });
const runClock = () => op('/billing/clock', {});

async function liveKey(acct: SeededAccount): Promise<string> {
  const res = await admin(acct, '/api_keys', { name: 'app' });
  expect(res.status).toBe(201);
  return res.body.key;
}

/** An account whose trial ended at creation, its live key, and a second instance that refuses it. */
async function refusedOnPeer() {
  now = Date.now();
  const acct = await stack.seedAccount({ plan: 'team', trialDays: 0 });
  const key = await liveKey(acct);
  const peer = await stack.startPeer();
  expect((await callModel(peer.url, key)).status).toBe(402);
  return { acct, key, peer };
}

async function auditActions(acct: SeededAccount): Promise<any[]> {
  return (await admin(acct, '/audit_log?limit=100')).body.data;
}

beforeAll(async () => {
  // Self-hosting: no Stripe. Grace of 3 days, to show it is configurable.
  stack = await startStack({ KEYGATE_PAYMENT_GRACE_DAYS: '3' }, { clock: () => now });
});
afterAll(() => stack?.close());

describe('trial without payment', () => {
  it('ends at the exact boundary: 402 on the next call, admin access intact, recorded by the clock', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'team' });
    const key = await liveKey(acct);
    const trialEnd = Date.parse((await admin(acct, '/billing/subscription')).body.trial.ends_at);
    expect(trialEnd).toBe(now + 14 * DAY);

    now = trialEnd - 1;
    expect((await callModel(url(), key)).status).toBe(200);

    now = trialEnd;
    const refused = await callModel(url(), key);
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({
      type: 'error',
      error: { type: 'billing_error' },
      request_id: expect.stringMatching(/^req_/),
    });
    expect(refused.body.error.message).toMatch(/trial ended .* without a payment method/);
    // No Stripe here: no checkout to send the admin to; the way out is the operator.
    expect(refused.body.error.message).toContain('ask your Keygate operator to extend the trial');
    expect(refused.body.error.message).toContain('keygate account set-trial');
    expect(refused.body.error.message).not.toMatch(/subscribe|checkout/i);
    expect(refused.headers.get('request-id')).toBe(refused.body.request_id);

    // The account API keeps answering the admin, and says why.
    const view = await admin(acct, '/billing/subscription');
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({
      state: 'paused',
      recorded_state: 'trialing',
      calls_allowed: false,
      billing: 'on',
      banner: { kind: 'blocked', message: refused.body.error.message },
    });
    expect((await admin(acct, '/me')).status).toBe(200);

    // The clock records what admission already enforced, once.
    expect((await runClock()).body.transitions).toBeGreaterThanOrEqual(1);
    await runClock();
    const subscription = (await admin(acct, '/billing/subscription')).body;
    expect(subscription.recorded_state).toBe('paused');
    expect(subscription.transitions).toEqual([
      expect.objectContaining({
        from: 'trialing',
        to: 'paused',
        cause: 'clock',
        cause_ref: 'trial_ended',
        at: new Date(trialEnd).toISOString(),
      }),
    ]);
    expect(await auditActions(acct)).toContainEqual(
      expect.objectContaining({ action: 'subscription.paused', actor: 'clock' }),
    );
  });

  it('a notice three days before the trial ends, once, for the banner and the alert outbox', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'solo' });
    const trialEnd = now + 14 * DAY;
    now = trialEnd - 3 * DAY - 1;
    await runClock();
    expect((await admin(acct, '/billing/subscription')).body.notices).toEqual([]);
    now = trialEnd - 3 * DAY;
    await runClock();
    await runClock();
    const view = (await admin(acct, '/billing/subscription')).body;
    expect(view.notices).toEqual([
      expect.objectContaining({
        kind: 'trial_will_end',
        due_at: new Date(trialEnd).toISOString(),
        delivered_at: null,
      }),
    ]);
    expect(view.banner).toMatchObject({
      kind: 'trial_will_end',
      message: expect.stringContaining('ask your Keygate operator to extend the trial'),
    });
    expect(view.banner.message).not.toMatch(/subscribe/i);
    expect(view.trial.days_left).toBe(3);
  });
});

describe('trial set by the operator (no Stripe)', () => {
  it('set-trial lets an ended trial run again on a second instance within a second, and extends it', async () => {
    const { acct, key, peer } = await refusedOnPeer();
    await runClock();
    expect((await admin(acct, '/billing/subscription')).body.recorded_state).toBe('paused');

    const until = new Date(now + 30 * DAY);
    const set = await op(`/accounts/${acct.id}/set_trial`, { until: until.toISOString() });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      state: 'trialing',
      calls_allowed: true,
      trial: { ends_at: until.toISOString(), days_left: 30 },
      banner: null,
    });
    const started = performance.now();
    let status = 0;
    while (performance.now() - started < 5_000 && (status = (await callModel(peer.url, key)).status) !== 200)
      await new Promise((r) => setTimeout(r, 20));
    expect(status).toBe(200);
    expect(performance.now() - started).toBeLessThan(1_000);

    // Extending a running trial changes no state, but is in the audit log with its new end.
    const later = new Date(now + 60 * DAY);
    const extended = await op(`/accounts/${acct.id}/set_trial`, { until: later.toISOString().slice(0, 10) });
    expect(extended.body.trial.ends_at).toBe(`${later.toISOString().slice(0, 10)}T00:00:00.000Z`);
    now = until.getTime() + DAY;
    expect((await callModel(url(), key)).status).toBe(200);
    const actions = await auditActions(acct);
    expect(actions).toContainEqual(
      expect.objectContaining({
        action: 'subscription.trialing',
        actor: 'operator',
        details: expect.objectContaining({
          from: 'paused',
          to: 'trialing',
          trial_ends_at: until.toISOString(),
        }),
      }),
    );
    expect(actions).toContainEqual(
      expect.objectContaining({
        action: 'subscription.trial_change',
        actor: 'operator',
        details: expect.objectContaining({ trial_ends_at: extended.body.trial.ends_at }),
      }),
    );
  });

  it('refuses a date in the past, a bad date, an unknown account, a suspended or a paid account', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'solo' });
    const past = await op(`/accounts/${acct.id}/set_trial`, { until: new Date(now - DAY).toISOString() });
    expect(past.status).toBe(400);
    expect(past.body.error).toMatchObject({
      type: 'invalid_request_error',
      message: 'until: must be in the future.',
    });
    const bad = await op(`/accounts/${acct.id}/set_trial`, { until: 'next week' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/until/);
    const unknown = await op('/accounts/acct_nope/set_trial', { until: new Date(now + DAY).toISOString() });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.type).toBe('not_found_error');

    await op(`/accounts/${acct.id}/mark_paid`, { until: new Date(now + 10 * DAY).toISOString() });
    const paid = await op(`/accounts/${acct.id}/set_trial`, { until: new Date(now + 5 * DAY).toISOString() });
    expect(paid.status).toBe(400);
    expect(paid.body.error.message).toMatch(/paid until .* mark-paid/);

    expect((await op(`/accounts/${acct.id}/suspend`, {})).status).toBe(200);
    const suspended = await op(`/accounts/${acct.id}/set_trial`, {
      until: new Date(now + 5 * DAY).toISOString(),
    });
    expect(suspended.status).toBe(400);
    expect(suspended.body.error.message).toMatch(/suspended: reactivate it first/);
  });
});

describe('paid by the operator (no Stripe)', () => {
  it('mark-paid restores service on a second instance within a second', async () => {
    const { acct, key, peer } = await refusedOnPeer();
    expect((await callModel(url(), key)).status).toBe(402);

    const paid = await op(`/accounts/${acct.id}/mark_paid`, {
      until: new Date(now + 40 * DAY).toISOString(),
    });
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ state: 'active', calls_allowed: true });
    const started = performance.now();
    await waitFor(async () => (await callModel(peer.url, key)).status === 200, {
      timeout: 5_000,
      interval: 20,
      what: 'the peer to serve the key',
    });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(await auditActions(acct)).toContainEqual(
      expect.objectContaining({
        action: 'subscription.active',
        actor: 'operator',
        details: expect.objectContaining({ cause: 'operator' }),
      }),
    );
  });

  it('past the paid date: calls go on for the grace period, then 402; paying again restores them', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'solo', trialDays: 0 });
    const key = await liveKey(acct);
    const until = now + 10 * DAY;
    await op(`/accounts/${acct.id}/mark_paid`, { until: new Date(until).toISOString() });
    now = until;
    expect((await callModel(url(), key)).status).toBe(200);
    await runClock();
    expect((await admin(acct, '/billing/subscription')).body).toMatchObject({
      recorded_state: 'past_due',
      past_due_since: new Date(until).toISOString(),
      banner: { kind: 'past_due' },
    });
    now = until + 3 * DAY - 1;
    expect((await callModel(url(), key)).status).toBe(200);
    now = until + 3 * DAY;
    const refused = await callModel(url(), key);
    expect(refused.status).toBe(402);
    expect(refused.body.error.message).toMatch(/paid period ended .* grace period is over/);
    await runClock();
    expect((await admin(acct, '/billing/subscription')).body.recorded_state).toBe('unpaid');
    await op(`/accounts/${acct.id}/mark_paid`, { until: new Date(now + 30 * DAY).toISOString() });
    expect((await callModel(url(), key)).status).toBe(200);
  });

  it('cancellation at period end: calls until the end, 402 after, and the last period invoiced', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'solo', trialDays: 0 });
    const key = await liveKey(acct);
    await op(`/accounts/${acct.id}/mark_paid`, { until: new Date(now + 365 * DAY).toISOString() });
    const canceled = await admin(acct, '/billing/cancel', {});
    expect(canceled.body).toMatchObject({ state: 'active', cancel_at_period_end: true });
    const end = Date.parse(canceled.body.current_period.end);
    now = end - 1;
    expect((await callModel(url(), key)).status).toBe(200);
    now = end;
    const refused = await callModel(url(), key);
    expect(refused.status).toBe(402);
    expect(refused.body.error.message).toMatch(/canceled/);
    await runClock();
    const view = (await admin(acct, '/billing/subscription')).body;
    expect(view.recorded_state).toBe('canceled');
    const invoices = (await admin(acct, '/invoices')).body.data;
    expect(invoices).toHaveLength(1);
    // Solo, one whole period, paid in advance by the operator: 900 cents, tax 0, marked paid.
    expect(invoices[0]).toMatchObject({
      currency: 'EUR',
      subtotal_cents: 900,
      tax_cents: 0,
      total_cents: 900,
      status: 'paid',
    });
  });

  it('suspension is a recorded state, and reactivation returns to the state it interrupted', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'team' });
    expect((await op(`/accounts/${acct.id}/suspend`, {})).status).toBe(200);
    expect((await op(`/accounts/${acct.id}/reactivate`, {})).status).toBe(200);
    const view = (await admin(acct, '/billing/subscription')).body;
    expect(view.transitions.map((t: any) => [t.from, t.to, t.cause])).toEqual([
      ['trialing', 'suspended', 'operator'],
      ['suspended', 'trialing', 'operator'],
    ]);
  });
});

describe('plans and seats', () => {
  it('plan changes check the seat rules; members are seats, prorated on the upcoming invoice', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'team', trialDays: 0 });
    await op(`/accounts/${acct.id}/mark_paid`, { until: new Date(now + 60 * DAY).toISOString() });
    const second = await admin(acct, '/users', { email: 'second@billing.test' });
    expect(second.status).toBe(201);

    const refused = await admin(acct, '/billing/plan', { plan: 'solo' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(
      /Solo plan has 1 seat\(s\) and the account has 2 members; remove members first/,
    );
    expect((await admin(acct, '/billing/subscription')).body.plan.id).toBe('team');

    const view = (await admin(acct, '/billing/subscription')).body;
    expect(view.seats).toEqual({ members: 2, charged: 2, min: 1, max: null });
    const upcoming = (await admin(acct, '/billing/upcoming')).body.invoice;
    const start = Date.parse(upcoming.period_start);
    const periodDays = Math.round((Date.parse(upcoming.period_end) - start) / DAY);
    // One seat at the period's start (the admin), then the second added a moment into it: every
    // day of the period is left, part of the first counted whole, so 1900 × P / P = 1900.
    expect(upcoming.lines.map((l: any) => [l.quantity, l.days, l.amount_cents])).toEqual([
      [1, null, 1900],
      [1, periodDays, 1900],
    ]);
    expect(upcoming).toMatchObject({
      currency: 'EUR',
      subtotal_cents: 3800,
      tax_cents: 0,
      total_cents: 3800,
    });

    expect(
      (
        await api(url(), `/v1/organizations/users/${second.body.id}`, {
          key: acct.adminKey,
          method: 'DELETE',
        })
      ).status,
    ).toBe(200);
    // Freed a moment in: paid through today, so P − 1 whole days credited: 1900 × (P − 1) / P.
    const credited = (await admin(acct, '/billing/upcoming')).body.invoice.lines.at(-1);
    expect(credited).toMatchObject({
      days: periodDays - 1,
      amount_cents: -Math.floor((2 * 1900 * (periodDays - 1) + periodDays) / (2 * periodDays)),
    });

    now = Date.now(); // the gateway's clock catches up with the members' (database) times
    const moved = await admin(acct, '/billing/plan', { plan: 'scale' });
    expect(moved.status).toBe(200);
    expect(moved.body.plan).toMatchObject({
      id: 'scale',
      price_cents: 4900,
      retention_days: 365,
      features: expect.arrayContaining(['spend budgets', 'alerts']),
    });
    expect(moved.body.transitions.at(-1)).toMatchObject({
      from_plan: 'team',
      to_plan: 'scale',
      cause: 'admin',
      cause_ref: 'plan change',
    });
    const lines = (await admin(acct, '/billing/upcoming')).body.invoice.lines;
    expect(lines.slice(-2).map((l: any) => l.description)).toEqual([
      expect.stringMatching(/^Unused time on the Team plan \(1 seat\)/),
      expect.stringMatching(/^Remaining time on the Scale plan \(1 seat\)/),
    ]);
    expect(await auditActions(acct)).toContainEqual(
      expect.objectContaining({ action: 'account.plan_change', actor: acct.adminKeyId }),
    );
  });

  it('the operator changes the catalog without code; bad values are refused', async () => {
    const changed = await op('/plans/team', {
      price_cents: 2100,
      features: ['a seat per member', 'priority support'],
      default_limits: { requests_per_minute: 240 },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      id: 'team',
      price_cents: 2100,
      per_seat: true,
      // The limits not given stay as they were: the provider's three since migration 070.
      default_limits: {
        requests_per_minute: 240,
        tokens_per_minute: null,
        input_tokens_per_minute: 2_000_000,
        output_tokens_per_minute: 400_000,
      },
    });
    const listed = (await op('/plans')).body.data;
    expect(listed.find((p: any) => p.id === 'team').features).toEqual([
      'a seat per member',
      'priority support',
    ]);
    expect((await op('/plans/solo', { max_seats: 3 })).status).toBe(400);
    expect((await op('/plans/new-one', { price_cents: 100 })).body.error.message).toMatch(
      /needs name, price_cents and per_seat/,
    );
    await op('/plans/team', { price_cents: 1900 });
  });

  it('invoices: listed, shown and printable, from the account API', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'team', trialDays: 0 });
    await op(`/accounts/${acct.id}/mark_paid`, { until: new Date(now + 10 * DAY).toISOString() });
    const end = Date.parse((await admin(acct, '/billing/subscription')).body.current_period.end);
    now = end;
    expect((await runClock()).body.invoices).toBeGreaterThanOrEqual(1);
    const [invoice] = (await admin(acct, '/invoices')).body.data;
    expect(invoice).toMatchObject({
      type: 'invoice',
      status: 'open',
      currency: 'EUR',
      total_cents: 1900,
      tax_cents: 0,
      lines: [expect.objectContaining({ amount_cents: 1900 })],
    });
    expect((await admin(acct, `/invoices/${invoice.id}`)).body.number).toBe(invoice.number);
    const page = await fetch(`${url()}${invoice.html_url}`, { headers: { 'x-api-key': acct.adminKey } });
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const text = await page.text();
    expect(text).toContain(`Invoice ${invoice.number}`);
    expect(text).toContain('€19.00');
    expect((await admin(acct, '/invoices/inv_doesnotexist')).status).toBe(404);
    // The billing page's one call: subscription, upcoming invoice, past invoices, the plan comparison.
    const overview = (await admin(acct, '/billing/overview')).body;
    expect(overview.invoices.map((i: any) => i.id)).toEqual([invoice.id]);
    expect(overview.upcoming).toMatchObject({ currency: 'EUR', period_start: new Date(end).toISOString() });
    expect(overview.plans.map((p: any) => p.id)).toEqual(['solo', 'team', 'scale']);
    expect(overview.subscription.seats).toMatchObject({ members: 1, charged: 1 });
    // The next period rolled on.
    expect(Date.parse((await admin(acct, '/billing/subscription')).body.current_period.start)).toBe(end);
  });
});
