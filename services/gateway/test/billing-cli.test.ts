import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from './harness';

const BIN = join(import.meta.dirname, '../bin/keygate.js');
const TOKEN = 'operator-token-0123456789';
let stack: Stack;
let now = Date.now();

/** The CLI as a script runs it, against the running gateway's operator API. */
function keygate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { DATABASE_URL: _d, KEYGATE_SECRET: _s, ...rest } = process.env;
  const env = {
    ...rest,
    KEYGATE_URL: stack.gateway.url,
    KEYGATE_OPERATOR_TOKEN: TOKEN,
    KEYGATE_LOG_LEVEL: 'warn',
  };
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

beforeAll(async () => {
  stack = await startStack({}, { clock: () => now });
});
afterAll(() => stack?.close());

describe('keygate billing commands', () => {
  it('mark-paid, billing status, invoice list and show, plan update', async () => {
    const acct = await stack.seedAccount({ plan: 'team', trialDays: 0 });
    const paid = await keygate([
      'account',
      'mark-paid',
      '--account',
      acct.id,
      '--until',
      '2099-01-01',
      '--json',
    ]);
    expect(paid.code, paid.stderr).toBe(0);
    expect(JSON.parse(paid.stdout)).toMatchObject({
      state: 'active',
      paid_until: '2099-01-01T00:00:00.000Z',
    });

    const status = await keygate(['account', 'billing', '--account', acct.id]);
    expect(status.stdout).toMatch(/state\s+active/);
    expect(status.stdout).toMatch(/1 member\(s\), 1 charged/);

    expect((await keygate(['invoice', 'list', '--account', acct.id])).stdout).toMatch(/No invoices yet/);
    const end = Date.parse(JSON.parse(paid.stdout).current_period.end);
    now = end;
    const clock = await keygate(['billing', 'clock', '--json']);
    expect(JSON.parse(clock.stdout).invoices).toBeGreaterThanOrEqual(1);
    const listed = JSON.parse((await keygate(['invoice', 'list', '--account', acct.id, '--json'])).stdout);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ total_cents: 1900, status: 'paid', currency: 'EUR' });
    const shown = await keygate(['invoice', 'show', '--account', acct.id, '--invoice', listed[0].id]);
    expect(shown.stdout).toContain(listed[0].number);
    expect(shown.stdout).toMatch(/total 19\.00 EUR/);

    const missing = await keygate(['invoice', 'show', '--account', acct.id, '--invoice', 'inv_nope']);
    expect(missing.code).toBe(4);
    const badDate = await keygate(['account', 'mark-paid', '--account', acct.id, '--until', 'soon']);
    expect(badDate.code).toBe(2);
    expect(badDate.stderr).toMatch(/until/);

    const plan = await keygate([
      'plan',
      'update',
      '--plan',
      'scale',
      '--retention-days',
      '400',
      '--features',
      'budgets, alerts, 400-day call log',
    ]);
    expect(plan.code, plan.stderr).toBe(0);
    const plans = JSON.parse((await keygate(['plans', '--json'])).stdout);
    expect(plans.find((p: any) => p.id === 'scale')).toMatchObject({
      retention_days: 400,
      features: ['budgets', 'alerts', '400-day call log'],
    });
  }, 180_000);

  it('set-trial runs an ended trial again until a date; bad input exits 2, an unknown account 4', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'team', trialDays: 0 });
    const until = new Date(now + 21 * 86_400_000).toISOString().slice(0, 10);
    const set = await keygate(['account', 'set-trial', '--account', acct.id, '--until', until]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(new RegExp(`is trialing, its trial ends ${until} \\(2[01] days left\\)`));
    const json = await keygate(['account', 'set-trial', '--account', acct.id, '--until', until, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      state: 'trialing',
      calls_allowed: true,
      trial: { ends_at: `${until}T00:00:00.000Z` },
    });
    expect((await keygate(['account', 'billing', '--account', acct.id])).stdout).toMatch(
      new RegExp(`trial_ends\\s+${until}`),
    );

    const noDate = await keygate(['account', 'set-trial', '--account', acct.id]);
    expect(noDate.code).toBe(2);
    expect(noDate.stderr).toMatch(/--until/);
    const past = await keygate(['account', 'set-trial', '--account', acct.id, '--until', '2020-01-01']);
    expect(past.code).toBe(2);
    expect(past.stderr).toMatch(/until: must be in the future/);
    const unknown = await keygate(['account', 'set-trial', '--account', 'acct_nope', '--until', until]);
    expect(unknown.code).toBe(4);
  }, 120_000);

  it('without Stripe, checkout says how payments are recorded instead', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'solo', trialDays: 0 });
    const res = await fetch(`${stack.gateway.url}/v1/organizations/billing/checkout`, {
      method: 'POST',
      headers: { 'x-api-key': acct.adminKey, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.message).toMatch(
      /keygate account set-trial.*keygate account mark-paid/,
    );
    expect(
      (await fetch(`${stack.gateway.url}/billing/stripe/webhook`, { method: 'POST', body: '{}' })).status,
    ).toBe(404);
  });
});
