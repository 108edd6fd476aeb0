import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callModel, startStack, type SeededAccount, type Stack } from './harness';

/**
 * Issue 16 item 6: what the plan catalog says is what accounts get. New keys take their plan's
 * default limits (shown on the key, and each one overridable, null for none); a private plan
 * is seen and chosen only by the accounts it is offered to; budgets and alerts, which work on
 * every plan, are listed on every plan.
 */
let stack: Stack;
const TOKEN = 'operator-token-0123456789';
const op = (path: string, body?: unknown) =>
  api(stack.gateway.url, `/operator/v1${path}`, { bearer: TOKEN, ...(body ? { body } : {}) });
const admin = (acct: SeededAccount, path: string, body?: unknown) =>
  api(stack.gateway.url, `/v1/organizations${path}`, { key: acct.adminKey, ...(body ? { body } : {}) });

beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

describe('plan default limits on new keys', () => {
  it("a new key takes its plan's default limits, shown on the key; each can be set or removed at creation", async () => {
    const team = await stack.seedAccount({ plan: 'team' });
    const plan = (await op('/plans')).body.data.find((p: { id: string }) => p.id === 'team');
    const plain = await admin(team, '/api_keys', {});
    expect(plain.status).toBe(201);
    expect(plain.body.limits).toEqual({
      requests_per_minute: plan.default_limits.requests_per_minute,
      tokens_per_minute: plan.default_limits.tokens_per_minute,
      input_tokens_per_minute: plan.default_limits.input_tokens_per_minute,
      output_tokens_per_minute: plan.default_limits.output_tokens_per_minute,
      monthly_spend_cap_cents: plan.default_limits.monthly_spend_cap_cents,
    });
    // The provider's three limits (migration 070); the combined one is no default any more.
    expect(plain.body.limits).toMatchObject({
      requests_per_minute: 2000,
      tokens_per_minute: null,
      input_tokens_per_minute: 2_000_000,
      output_tokens_per_minute: 400_000,
    });
    // The listing shows them too.
    const listed = (await admin(team, `/api_keys/${plain.body.id}`)).body;
    expect(listed.limits.requests_per_minute).toBe(2000);
    const own = await admin(team, '/api_keys', {
      limits: { requests_per_minute: null, tokens_per_minute: 5_000 },
    });
    expect(own.body.limits).toMatchObject({ requests_per_minute: null, tokens_per_minute: 5_000 });
    // Admin keys cannot call models: no defaults for them.
    const adminKey = await admin(team, '/api_keys', { kind: 'admin' });
    expect(adminKey.status).toBe(201);
    expect(adminKey.body.limits).toEqual({
      requests_per_minute: null,
      tokens_per_minute: null,
      input_tokens_per_minute: null,
      output_tokens_per_minute: null,
      monthly_spend_cap_cents: null,
    });
  });

  it("the plan's defaults are enforced on the keys they were applied to", async () => {
    const created = await op('/plans/tight', {
      name: 'Tight',
      price_cents: 100,
      per_seat: true,
      default_limits: { requests_per_minute: 2 },
    });
    expect(created.status).toBe(201);
    const acct = await stack.seedAccount();
    expect((await op(`/accounts/${acct.id}`, { plan: 'tight' })).status).toBe(200);
    const key = (await admin(acct, '/api_keys', {})).body;
    expect(key.limits.requests_per_minute).toBe(2);
    expect((await callModel(stack.gateway.url, key.key)).status).toBe(200);
    expect((await callModel(stack.gateway.url, key.key)).status).toBe(200);
    const third = await callModel(stack.gateway.url, key.key);
    expect(third.status).toBe(429);
    expect(third.body.error.message).toMatch(/2 requests per minute/);
  });
});

describe('plan visibility', () => {
  it('a private plan is offered to named accounts only; others neither see it nor can move to it', async () => {
    const chosen = await stack.seedAccount();
    const other = await stack.seedAccount();
    const made = await op('/plans/friends', {
      name: 'Friends',
      price_cents: 0,
      per_seat: true,
      visibility: 'private',
      offered_to: [chosen.id],
    });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ visibility: 'private', offered_to: [chosen.id] });

    const seen = async (acct: SeededAccount) =>
      (await admin(acct, '/billing/plans')).body.data.map((p: { id: string }) => p.id) as string[];
    expect(await seen(other)).not.toContain('friends');
    expect(await seen(chosen)).toContain('friends');
    expect(
      (await admin(other, '/billing/overview')).body.plans.map((p: { id: string }) => p.id),
    ).not.toContain('friends');

    const refused = await admin(other, '/billing/plan', { plan: 'friends' });
    expect(refused.status).toBe(400);
    // Exactly what a plan that does not exist gets: nothing tells the plan is there.
    const missing = await admin(other, '/billing/plan', { plan: 'nosuchplan' });
    expect(refused.body.error.message).toBe(missing.body.error.message.replace('nosuchplan', 'friends'));
    expect((await op(`/accounts/${other.id}`)).body.plan.id).not.toBe('friends');

    const moved = await admin(chosen, '/billing/plan', { plan: 'friends' });
    expect(moved.status).toBe(200);
    expect((await op(`/accounts/${chosen.id}`)).body.plan.id).toBe('friends');
    // The operator puts any account on any plan.
    expect((await op(`/accounts/${other.id}`, { plan: 'friends' })).status).toBe(200);
  });
});

describe('what the catalog lists', () => {
  it('budgets and alerts work on team, and the team plan lists them', async () => {
    const team = await stack.seedAccount({ plan: 'team' });
    const plan = (await admin(team, '/billing/plans')).body.data.find((p: { id: string }) => p.id === 'team');
    expect(plan.features).toEqual(expect.arrayContaining(['spend budgets', 'alerts']));
    const budget = await admin(team, '/budgets', { scope: 'account', limit_cents: 500 });
    expect(budget.status).toBe(201);
  });
});
