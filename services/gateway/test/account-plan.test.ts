import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startStack, type Stack } from './harness';

let stack: Stack;
const TOKEN = 'operator-token-0123456789';
const op = (path: string, body?: unknown) =>
  api(stack.gateway.url, `/operator/v1${path}`, { bearer: TOKEN, ...(body ? { body } : {}) });

beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

describe('plan changes and seats', () => {
  it('refuses a downgrade that leaves more members than seats, and allows it once they fit', async () => {
    const acct = await stack.seedAccount({ plan: 'team' });
    const added = await api(stack.gateway.url, '/v1/organizations/users', {
      key: acct.adminKey,
      body: { email: 'second@plan.test' },
    });
    expect(added.status).toBe(201);
    const refused = await op(`/accounts/${acct.id}`, { plan: 'solo' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(
      /Solo plan has 1 seat\(s\) and the account has 2 members; remove members first/i,
    );
    expect((await op(`/accounts/${acct.id}`)).body.plan.id).toBe('team');
    expect(
      (
        await api(stack.gateway.url, `/v1/organizations/users/${added.body.id}`, {
          key: acct.adminKey,
          method: 'DELETE',
        })
      ).status,
    ).toBe(200);
    const moved = await op(`/accounts/${acct.id}`, { plan: 'solo' });
    expect(moved.status).toBe(200);
    expect(moved.body.plan.id ?? moved.body.plan).toBe('solo');
  });

  it('a downgrade racing a member add never leaves a solo account with two seats', async () => {
    for (let round = 0; round < 6; round++) {
      const acct = await stack.seedAccount({ plan: 'team' });
      await Promise.all([
        op(`/accounts/${acct.id}`, { plan: 'solo' }),
        api(stack.gateway.url, '/v1/organizations/users', {
          key: acct.adminKey,
          body: { email: `racer${round}@plan.test` },
        }),
      ]);
      const account = (await op(`/accounts/${acct.id}`)).body;
      const members = (
        await api(stack.gateway.url, '/v1/organizations/users?limit=100', { key: acct.adminKey })
      ).body.data;
      if ((account.plan.id ?? account.plan) === 'solo') expect(members).toHaveLength(1);
      else expect(members.length).toBeLessThanOrEqual(2);
    }
  });
});
