import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentedRoutes } from '../src/api-docs/openapi';
import { api, startStack, type Stack } from './harness';

let stack: Stack;
let admin: string;

beforeAll(async () => {
  stack = await startStack();
  admin = (await stack.newKey({ kind: 'admin' })).secret;
});
afterAll(() => stack?.close());

describe('unknown query parameters', () => {
  // Every account and operator route of the app's own route table, so a new route cannot be missed;
  // documentedRoutes leaves out only NOT_JSON_APIS (the printable invoice, the Stripe webhook, the dashboard).
  it('get a 400 naming them on every route, before the route does anything', async () => {
    const routes = documentedRoutes({ routes: stack.gateway.routes });
    expect(routes.length).toBeGreaterThan(40);
    for (const r of routes) {
      const path = r.path.replace(':account_id', stack.account.id).replace(/:\w+/g, 'key_doesnotexist');
      const operator = r.path.startsWith('/operator/');
      const res = await api(stack.gateway.url, `${path}?starting_at=2025-01-01&colour=blue&limit=5`, {
        method: r.method,
        ...(operator ? { bearer: stack.gateway.operatorToken } : { key: admin }),
        ...(r.method === 'POST' ? { body: {} } : {}),
      });
      expect([r.method, r.path, res.status]).toEqual([r.method, r.path, 400]);
      expect(res.body.error.message).toMatch(/^Unknown query parameters? .*'colour'/);
      expect(res.headers.get('request-id')).toMatch(/^req_/);
    }
    // Nothing changed: the POSTs and DELETEs never ran.
    expect((await api(stack.gateway.url, '/v1/organizations/users', { key: admin })).body.data).toEqual([]);
  });
});
