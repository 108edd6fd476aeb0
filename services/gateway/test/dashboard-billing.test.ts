import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { accessibilityProblems, launchBrowser, screenshot, signIn, tableText } from './dashboard-browser';
import { ALLOW_LOOPBACK_RECEIVERS } from './webhook-receiver';
import { api, callModel, startStack, type SeededAccount, type Stack } from './harness';
import { startStripeStandIn, type StripeStandIn } from './stripe-stand-in';

// A real browser and axe on a shared 2-core machine: each step may take a while.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const DAY = 86_400_000;
const TOKEN = 'operator-token-0123456789';
let stack: Stack;
let stripe: StripeStandIn;
let browser: Browser;
let base: string;
let now = Date.now();

const op = (path: string, body?: unknown) =>
  api(base, `/operator/v1${path}`, { bearer: TOKEN, ...(body !== undefined ? { body } : {}) });
const admin = (acct: SeededAccount, path: string, body?: unknown) =>
  api(base, `/v1/organizations${path}`, { key: acct.adminKey, ...(body !== undefined ? { body } : {}) });
const eur = (cents: number) => `€${(cents / 100).toFixed(2)}`;
const usd = (cents: number) => (cents / 100).toFixed(4);

beforeAll(async () => {
  stripe = await startStripeStandIn();
  stack = await startStack(
    {
      ...stripe.env,
      ...ALLOW_LOOPBACK_RECEIVERS,
      KEYGATE_PAYMENT_GRACE_DAYS: '3',
      KEYGATE_BILLING_CLOCK_MS: '3600000',
    },
    { clock: () => now },
  );
  base = stack.gateway.url;
  for (const id of ['solo', 'team', 'scale'])
    expect((await op(`/plans/${id}`, { stripe_price_id: `price_${id}` })).status).toBe(200);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await stack?.close();
  await stripe?.close();
});

/** A fresh browser session signed in with `token`. */
async function session(token: string): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await signIn(page, base, token);
  return page;
}

/** Visits a page, saves its screenshot and asserts axe finds nothing serious. */
async function visit(page: Page, path: string, shot: string): Promise<void> {
  const res = await page.goto(base + path);
  expect(res?.status(), path).toBe(200);
  await screenshot(page, shot);
  expect(await accessibilityProblems(page), path).toEqual([]);
}

const fact = (page: Page, name: string) => page.locator(`[data-fact="${name}"]`).textContent();

describe('billing page (account admin)', () => {
  it('shows plan, trial days left, seats used and the upcoming invoice as the account API has them; the trial notice shows on every page', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'team', name: 'Trial Co', trialDays: 10 });
    await admin(acct, '/users', { email: 'two@trial.test' });
    await admin(acct, '/users', { email: 'three@trial.test' });
    const page = await session(acct.adminKey);
    await visit(page, '/dashboard/billing', '20-billing-trial');

    const view = (await admin(acct, '/billing/subscription')).body;
    expect(view).toMatchObject({
      state: 'trialing',
      trial: { days_left: 10 },
      seats: { members: 3, charged: 3 },
    });
    expect(await fact(page, 'plan')).toBe('Team, €19.00 per seat per month');
    expect(await fact(page, 'trial')).toBe(`10 days left (ends ${view.trial.ends_at.slice(0, 10)})`);
    expect(await fact(page, 'seats')).toBe('3 of unlimited (3 charged)');
    expect(await fact(page, 'seat-rules')).toBe('a seat per member, at least 1');

    const upcoming = (await admin(acct, '/billing/upcoming')).body.invoice;
    expect(upcoming.total_cents).toBe(3 * 1900);
    const rows = await tableText(page, 'upcoming-invoice');
    expect(rows.slice(1, 1 + upcoming.lines.length)).toEqual(
      upcoming.lines.map((l: any) => [
        l.description,
        String(l.quantity),
        eur(l.unit_amount_cents),
        l.days === null ? '' : `${l.days}/${l.period_days}`,
        eur(l.amount_cents),
      ]),
    );
    expect(rows.at(-1)).toEqual(['Total', '', '', '', eur(upcoming.total_cents)]);
    // Usage costs are in USD, beside the invoice and never in it.
    expect(await page.locator('[data-usage-usd]').textContent()).toContain('USD');
    expect(rows.flat().join(' ')).not.toContain('USD');
    expect(await page.locator('[data-plan-adds]').textContent()).toMatch(
      /Scale adds over Team: higher default limits, 365-day call log \(4,000 requests\/min per key against 2,000; 4,000,000 input tokens\/min against 2,000,000; 800,000 output tokens\/min against 400,000; call log kept 365 days against 30\)/,
    );
    // Solo has one seat and the account three members: no button for it, and the reason said.
    expect(await page.getByRole('button', { name: /Solo/ }).count()).toBe(0);
    expect(await page.locator('.billing-actions').textContent()).toContain(
      'Solo has 1 seat and the account 3 members',
    );
    expect(await page.locator('[data-standing]').count()).toBe(0);

    // Three days before the trial ends the clock writes the notice: a banner on every page.
    now = Date.parse(view.trial.ends_at) - 3 * DAY;
    expect((await op('/billing/clock', {})).status).toBe(200);
    for (const path of ['/dashboard', '/dashboard/keys', '/dashboard/billing']) {
      await page.goto(base + path);
      expect(await page.locator('[data-standing="trial_will_end"]').textContent(), path).toContain(
        `The free trial ends on ${view.trial.ends_at.slice(0, 10)}`,
      );
    }
    expect(await fact(page, 'trial')).toMatch(/^3 days left/);
    await screenshot(page, '21-billing-trial-notice');
    await page.context().close();
  });

  it('the upgrade button posts with the CSRF token and leads the browser to the stand-in Stripe Checkout', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'team', name: 'Upgrade Co', trialDays: 10 });
    await admin(acct, '/users', { email: 'two@upgrade.test' });
    const page = await session(acct.adminKey);
    await page.goto(`${base}/dashboard/billing`);
    await Promise.all([
      page.waitForURL(`${stripe.url}/c/pay/**`),
      page.getByRole('button', { name: 'Upgrade to Scale' }).click(),
    ]);
    expect(await page.locator('h1').textContent()).toBe('Stand-in Checkout');
    const created = stripe.requests.filter(
      (r) => r.path === '/v1/checkout/sessions' && r.form.client_reference_id === acct.id,
    );
    expect(created).toHaveLength(1);
    expect(created[0]!.form).toMatchObject({
      'line_items[0][price]': 'price_scale',
      'line_items[0][quantity]': '2',
      'subscription_data[metadata][account_id]': acct.id,
    });
    expect(page.url()).toMatch(new RegExp(`^${stripe.url}/c/pay/cs_test_`));

    // Without the session's CSRF token the same post is refused and reaches no Stripe.
    const cookies = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const forged = await fetch(`${base}/dashboard/billing/plan`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: cookies, 'content-type': 'application/x-www-form-urlencoded', origin: base },
      body: 'plan=scale&_csrf=forged',
    });
    expect(forged.status).toBe(403);
    expect(
      stripe.requests.filter(
        (r) => r.path === '/v1/checkout/sessions' && r.form.client_reference_id === acct.id,
      ),
    ).toHaveLength(1);
    await page.context().close();
  });

  it("a 402'd account's admin still signs in, and every page says why and what to do", async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'solo', name: 'Lapsed Co', trialDays: 0 });
    const key = (await admin(acct, '/api_keys', { name: 'app' })).body.key as string;
    const refused = await callModel(base, key);
    expect(refused.status).toBe(402);
    expect(refused.body.error.type).toBe('billing_error');

    const page = await session(acct.adminKey);
    expect(new URL(page.url()).pathname).toBe('/dashboard');
    const banner = page.locator('[data-standing="blocked"]');
    expect(await banner.locator('h2').textContent()).toBe('Model calls are paused');
    expect(await banner.textContent()).toContain(refused.body.error.message);
    await screenshot(page, '22-overview-402');
    await visit(page, '/dashboard/billing', '23-billing-402');
    expect(await fact(page, 'state')).toBe('paused (trial ended without payment) · calls paused');
    expect(await page.getByRole('button', { name: 'Subscribe to Solo' }).count()).toBe(1);
    // The trial is over: nothing to cancel, and no trial days to carry over.
    expect(await page.getByRole('button', { name: /Cancel/ }).count()).toBe(0);
    expect(await page.locator('.billing-actions').textContent()).not.toContain('carry over');
    await page.context().close();
  });
});

describe('payments recorded by the operator, and past invoices', () => {
  it('the operator marks an account paid from the dashboard; the period ends and its invoice is listed, printable', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'team', name: 'Invoice Co', trialDays: 0 });
    const operator = await session(TOKEN);
    await visit(operator, '/dashboard/billing', '24-operator-billing');
    const through = new Date(now + 40 * DAY).toISOString().slice(0, 10);
    await operator.getByLabel('Account').selectOption(acct.id);
    await operator.getByLabel('Paid through (UTC, inclusive)').fill(through);
    await operator.getByRole('button', { name: 'Mark paid' }).click();
    await operator.waitForLoadState('domcontentloaded');
    expect(await operator.locator('[role="status"]').textContent()).toContain(
      `${acct.id} is paid until ${through} (end of that day, UTC)`,
    );
    const view = (await admin(acct, '/billing/subscription')).body;
    expect(view).toMatchObject({
      state: 'active',
      paid_until: new Date(Date.parse(`${through}T00:00:00Z`) + DAY).toISOString(),
      payment: { provider: 'manual' },
    });
    const row = (await tableText(operator, 'subscriptions')).find((r) => r[1] === acct.id)!;
    expect(row.slice(2, 5)).toEqual(['team', 'active', 'allowed']);
    await operator.context().close();

    // The first period ends: the clock issues its invoice, paid (the operator recorded it).
    now = Date.parse(view.current_period.end) + 60_000;
    expect((await op('/billing/clock', {})).body.invoices).toBeGreaterThanOrEqual(1);
    const [invoice] = (await admin(acct, '/invoices')).body.data;
    expect(invoice).toMatchObject({ status: 'paid', total_cents: 1900 });

    const page = await session(acct.adminKey);
    await visit(page, '/dashboard/billing', '25-billing-invoices');
    const rows = await tableText(page, 'invoices');
    expect(rows[1]).toEqual([
      invoice.number,
      `${invoice.period_start.slice(0, 10)} to ${invoice.period_end.slice(0, 10)}`,
      'paid',
      eur(1900),
      invoice.paid_at.slice(0, 10),
    ]);
    await page.getByRole('link', { name: invoice.number }).click();
    await page.waitForLoadState('domcontentloaded');
    expect(new URL(page.url()).pathname).toBe(`/dashboard/billing/invoices/${invoice.id}`);
    expect(await page.locator('h1').textContent()).toBe(`Invoice ${invoice.number}`);
    expect(await page.locator('tfoot').textContent()).toContain(eur(1900));
    await screenshot(page, '26-invoice-print');
    expect(await accessibilityProblems(page)).toEqual([]);

    // A member sees the plan and the trial, not the invoices; the printable page is admins' only.
    const member = (await admin(acct, '/users', { email: 'member@invoice.test' })).body;
    const memberKey = (await admin(acct, '/api_keys', { name: 'member key', member_id: member.id })).body
      .key as string;
    const memberPage = await session(memberKey);
    await visit(memberPage, '/dashboard/billing', '27-billing-member');
    expect(await memberPage.locator('#invoices').count()).toBe(0);
    expect(
      await memberPage
        .getByRole('button')
        .filter({ hasText: /Upgrade|Switch|Subscribe|Cancel/ })
        .count(),
    ).toBe(0);
    expect((await memberPage.goto(`${base}/dashboard/billing/invoices/${invoice.id}`))?.status()).toBe(403);
    await page.context().close();
    await memberPage.context().close();
  });
});

describe('budgets page', () => {
  it("shows each budget's progress exactly as listBudgets has it; an admin creates budgets and a webhook endpoint from the page", async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'scale', name: 'Budget Co' });
    const member = (await admin(acct, '/users', { email: 'dev@budget.test' })).body;
    const key = (await admin(acct, '/api_keys', { name: 'dev laptop', member_id: member.id })).body;
    // One cent for the account, alerting at 10%: a few calls cross it (recorded as they are admitted).
    expect(
      (
        await admin(acct, '/budgets', {
          scope: 'account',
          limit_cents: 1,
          thresholds_percent: [10, 100],
          hard_cap: false,
        })
      ).status,
    ).toBe(201);
    for (let i = 0; i < 4; i++) {
      expect((await callModel(base, key.key)).status).toBe(200);
      await stack.gateway.writer.flush();
    }

    const page = await session(acct.adminKey);
    await page.goto(`${base}/dashboard/budgets`);
    await page.getByText('Create a budget').click();
    await page.getByLabel('Name').fill('Dev key monthly');
    await page.getByLabel('Applies to').selectOption(`api_key:${key.id}`);
    await page.getByLabel('Limit (USD)').fill('2.50');
    await page.getByLabel('Alert at (percent of the limit, comma-separated)').fill('25, 75');
    await page.getByRole('button', { name: 'Create budget' }).click();
    await page.waitForURL(`${base}/dashboard/budgets`);
    await visit(page, '/dashboard/budgets', '28-budgets');

    const listed = (await admin(acct, '/budgets')).body.data as any[];
    expect(listed.map((b) => b.name).sort()).toEqual(['Dev key monthly', 'monthly account budget']);
    expect(listed.find((b) => b.name === 'Dev key monthly')).toMatchObject({
      scope: 'api_key',
      target_id: key.id,
      limit_cents: 250,
      hard_cap: true,
      thresholds_percent: [25, 75],
      period: 'monthly',
    });
    const [header, ...rows] = await tableText(page, 'budgets');
    const col = (label: string) => header!.indexOf(label);
    for (const b of listed) {
      const r = rows.find((x) => x[0] === b.name)!;
      expect(r[col('Limit (USD)')]).toBe(usd(b.progress.limit_cents));
      expect(r[col('Spent (USD)')]).toBe(usd(b.progress.spent_cents));
      expect(r[col('Used')]).toBe(`${b.progress.percent.toFixed(2)}%`);
      expect(r[col('Resets on')]).toBe(b.progress.period_end.slice(0, 10));
      expect(r[col('Thresholds')]).toBe(
        b.progress.thresholds
          .map(
            (t: any) =>
              `${t.percent}% ${t.crossed_at ? `crossed ${t.crossed_at.replace('T', ' ').slice(0, 19)}` : 'not yet'}`,
          )
          .join('; '),
      );
    }
    expect(listed.every((b) => b.progress.spent_cents > 0)).toBe(true);
    expect(listed.find((b) => b.scope === 'account').progress.thresholds[0].crossed_at).not.toBeNull();

    // A webhook endpoint: the secret shown once, then only the endpoint and its deliveries.
    await page.getByText('Add a webhook endpoint').click();
    await page.getByLabel('URL').fill('http://127.0.0.1:9/keygate-alerts');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.waitForLoadState('domcontentloaded');
    const secret = await page.locator('#new-secret').textContent();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9]{32}$/);
    await screenshot(page, '29-budgets-webhook-secret');
    const endpoints = (await admin(acct, '/webhooks')).body.data;
    expect(endpoints).toEqual([
      expect.objectContaining({
        url: 'http://127.0.0.1:9/keygate-alerts',
        events: [
          'budget.threshold_crossed',
          'spend_limit.threshold_crossed',
          'error_rate.exceeded',
          'api_key.used_after_rotation',
          'billing.notice',
          'spend_limit.increase_requested',
          'spend_limit.increase_approved',
          'spend_limit.increase_denied',
        ],
      }),
    ]);
    await page.goto(`${base}/dashboard/budgets`);
    expect(await page.content()).not.toContain(secret!);
    expect((await tableText(page, 'webhooks'))[1]!.slice(0, 3)).toEqual([
      'http://127.0.0.1:9/keygate-alerts',
      endpoints[0].events.join(', '),
      'active',
    ]);
    await page.context().close();
  });
});
