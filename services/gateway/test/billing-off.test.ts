import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardSession } from './dashboard-http';
import { api, callModel, startStack, type Stack } from './harness';

// A team's own gateway: no Stripe, no payments at all; the clock is the test's.
let now = Date.now();
let stack: Stack;
beforeAll(async () => void (stack = await startStack({ KEYGATE_BILLING: 'off' }, { clock: () => now })));
afterAll(() => stack?.close());
const url = () => stack.gateway.url;
const op = (path: string, body: unknown = undefined) =>
  api(url(), `/operator/v1${path}`, { bearer: stack.config.operatorToken!, body });

describe('KEYGATE_BILLING=off', () => {
  it('an account past its trial keeps calling; nothing falls due; the views say billing is off', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'team', trialDays: 0 });
    const key = (
      await api(url(), '/v1/organizations/api_keys', { key: acct.adminKey, body: { name: 'app' } })
    ).body.key;
    now += 400 * 86_400_000;
    const answered = await callModel(url(), key);
    expect(answered.status).toBe(200);

    const clock = await op('/billing/clock', {});
    expect(clock.body).toMatchObject({ transitions: 0, notices: 0, invoices: 0 });
    const view = (await api(url(), '/v1/organizations/billing/subscription', { key: acct.adminKey })).body;
    expect(view).toMatchObject({
      billing: 'off',
      state: 'active',
      recorded_state: 'trialing',
      calls_allowed: true,
      banner: null,
      notices: [],
      transitions: [],
    });
  });

  it('the overview counts down no trial: the account is treated as paid', async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'team', trialDays: 14 });
    const session = await dashboardSession(url(), acct.adminKey);
    const html = await (await session.get('/dashboard')).text();
    const plan = /<aside class="banner" aria-label="Plan">([\s\S]*?)<\/aside>/.exec(html)?.[1] ?? '';
    expect(plan).toContain('Team plan');
    expect(plan).not.toContain('free trial');
  });

  it("the operator's suspension still refuses calls", async () => {
    now = Date.now();
    const acct = await stack.seedAccount({ plan: 'solo' });
    const key = (
      await api(url(), '/v1/organizations/api_keys', { key: acct.adminKey, body: { name: 'app' } })
    ).body.key;
    expect((await op(`/accounts/${acct.id}/suspend`, {})).status).toBe(200);
    const refused = await callModel(url(), key);
    expect(refused.status).toBe(403);
    // The account's admin key is refused too; the operator sees the state.
    const view = (await op(`/accounts/${acct.id}/billing/subscription`)).body;
    expect(view).toMatchObject({ billing: 'off', state: 'suspended', banner: null });
  });
});
