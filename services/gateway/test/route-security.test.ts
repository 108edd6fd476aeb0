import { ALLOW_LOOPBACK_RECEIVERS } from './webhook-receiver';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../src/auth/keys';
import { issueSeatInvoice } from './kit/invoice';
import { appForRouteTable } from './kit/route-table';
import { VALID_UPDATE } from './kit/valid-bodies';
import { api, type ApiResponse, type SeededAccount, type Stack, startStack } from './harness';

// The routes come from the app's own route table, so a new route is checked the day it lands.
const table = appForRouteTable().routes;

type Route = readonly [method: string, path: string];
const routes: Route[] = [
  ...new Map(
    table
      .filter((r) => r.method !== 'ALL')
      .map((r) => [`${r.method} ${r.path}`, [r.method, r.path] as const]),
  ).values(),
];

const ACCOUNT = '/v1/organizations';
const OPERATOR = '/operator/v1';
const isAccount = (p: string) => p === ACCOUNT || p.startsWith(`${ACCOUNT}/`);
const isOperator = (p: string) => p.startsWith(`${OPERATOR}/`);
const isProxy = (p: string) => p.startsWith('/v1/') && !isAccount(p) && !(p in OTHERWISE_GUARDED);

/** Routes outside the three key-guarded families, and what guards them instead. */
const OTHERWISE_GUARDED: Record<string, string> = {
  '/healthz': 'public liveness probe',
  '/health': 'public liveness probe',
  '/readyz': 'public readiness probe',
  '/api/hello': "answers Claude Code's startup probe, empty",
  '/favicon.ico': "redirects to the dashboard's icon, a public asset",
  '/billing/stripe/webhook': "Stripe's signature (billing-stripe.test.ts)",
  '/openapi.json': 'public API description',
  '/docs': 'public API description',
  '/': 'redirects to the dashboard, which asks for a sign-in',
  '/otlp/v1/metrics': "a member's key, as the proxy resolves it (otlp-receiver.test.ts)",
  '/otlp/v1/logs': "a member's key, as the proxy resolves it (otlp-receiver.test.ts)",
  '/v1/oauth/token':
    "an issuer's signed JWT that an account's federation rule accepts (workload-tokens.test.ts)",
  '/keygate/v1/spend':
    "the caller's own key, as the proxy resolves it; its own limits only (spend-warnings.test.ts)",
};
/** Bedrock InvokeModel and Vertex rawPredict in front of the proxy (cloud-fronts/): app keys, each in its cloud's error shape. */
const isCloudFront = (p: string) => p.startsWith('/bedrock/') || p.startsWith('/vertex/');
const isDashboard = (p: string) => p === '/dashboard' || p.startsWith('/dashboard/');
/**
 * Sign-in through an account's identity provider: `/idp/v1` is guarded by the provider itself
 * (a device code it approved, a refresh token it still honours; idp-device.test.ts), `/scim/v2`
 * by the account's SCIM bearer tokens (scim.test.ts).
 */
const isIdentity = (p: string) => p.startsWith('/idp/v1/') || p.startsWith('/scim/v2/');

/**
 * Claude Code's gateway sign-in (claude-gateway/): discovery and the OAuth endpoints are guarded
 * by the account's identity provider (claude-gateway-protocol.test.ts); every other route under
 * the base takes a credential of that account only (below).
 */
const isClaudeGateway = (p: string) => p.startsWith('/claude/:account/');
const isClaudeOAuth = (p: string) => /^\/claude\/:account\/(oauth\/|\.well-known\/)/.test(p);
const claudeRoutes = routes.filter(([, p]) => isClaudeGateway(p) && !isClaudeOAuth(p));

const accountRoutes = routes.filter(([, p]) => isAccount(p));
const operatorRoutes = routes.filter(([, p]) => isOperator(p));
const proxyRoutes = routes.filter(([, p]) => isProxy(p));
const frontRoutes = routes.filter(([, p]) => isCloudFront(p));

const OPERATOR_TOKEN = 'operator-token-0123456789';
let stack: Stack;
let acme: SeededAccount;
let other: SeededAccount;
let suspended: SeededAccount;
/** A live key of the suspended account, made before it was suspended. */
let suspendedAppKey: string;
/** Ids of acme's objects, by the collection a `:id` belongs to. */
const acmeIds: Record<string, string> = {};

/** `/users/:id` → `/users/<acme's member>`; a printable invoice's `:file{…}` → `<invoice>.html`. */
function concrete(path: string): string {
  return path
    .replace(/\/([a-z_]+)\/:id(?=\/|$)/g, (_m, collection: string) => {
      const id = acmeIds[collection];
      if (!id) throw new Error(`no object of acme's to name in ${path}: add one for "${collection}"`);
      return `/${collection}/${id}`;
    })
    .replace(/:file\{[^}]*\}/, () => `${acmeIds.invoices}.html`)
    .replace(/:account_id|:plan_id|:key_id/g, (p) =>
      p === ':account_id' ? acme.id : p === ':key_id' ? acme.adminKeyId : 'team',
    );
}

function send(method: string, path: string, auth: { key?: string; bearer?: string } = {}) {
  const body =
    method === 'POST' ? (Object.entries(VALID_UPDATE).find(([p]) => path.endsWith(p))?.[1] ?? {}) : undefined;
  return api(stack.gateway.url, concrete(path), { method, body, ...auth });
}

/**
 * Wrong operator tokens are counted per client address (20 a minute, then 429): each route's
 * attempts come from a loopback address of its own, as from a distinct client.
 */
async function sendFrom(
  address: string,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<ApiResponse> {
  const dispatcher = new Agent({ localAddress: address });
  try {
    const res = await undiciFetch(stack.gateway.url + concrete(path), {
      method,
      headers: { ...headers, 'content-type': 'application/json' },
      body: method === 'POST' ? '{}' : undefined,
      dispatcher,
    });
    return { status: res.status, body: await res.json(), headers: res.headers as unknown as Headers };
  } finally {
    await dispatcher.close();
  }
}

function expectRefused(res: ApiResponse, status: number, type: string, message?: RegExp) {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ type: 'error', error: { type } });
  expect(res.body.request_id).toBe(res.headers.get('request-id'));
  if (message) expect(res.body.error.message).toMatch(message);
}

beforeAll(async () => {
  stack = await startStack({ ...ALLOW_LOOPBACK_RECEIVERS });
  acme = await stack.seedAccount({ name: 'Acme', plan: 'team' });
  other = await stack.seedAccount({ name: 'Other' });
  suspended = await stack.seedAccount({ name: 'Suspended' });
  const as = (path: string, body: object) =>
    api(stack.gateway.url, `${ACCOUNT}${path}`, { key: acme.adminKey, body });
  acmeIds.users = (await as('/users', { email: 'dev@acme.test' })).body.id;
  acmeIds.api_keys = (await as('/api_keys', { name: 'acme app' })).body.id;
  acmeIds.budgets = (await as('/budgets', { scope: 'account', limit_cents: 100 })).body.id;
  acmeIds.webhooks = (
    await as('/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['billing.notice'] })
  ).body.id;
  acmeIds.invites = (await as('/invites', { email: 'invitee@acme.test', role: 'user' })).body.id;
  acmeIds.upstreams = (
    await as('/upstreams', {
      kind: 'foundry',
      base_url: 'http://127.0.0.1:9',
      auth: 'x-api-key',
      credential: 'acme-foundry-key-0123456789',
    })
  ).body.id;
  acmeIds.rbac_groups = (await as('/rbac_groups', { name: 'acme group' })).body.id;
  acmeIds.service_accounts = (await as('/service_accounts', { name: 'acme-ci' })).body.id;
  acmeIds.federation_issuers = (
    await as('/federation_issuers', { name: 'acme-ci', issuer_url: 'https://token.actions.example' })
  ).body.id;
  acmeIds.federation_rules = (
    await as('/federation_rules', {
      name: 'acme-ci',
      issuer_id: acmeIds.federation_issuers,
      match: { subject_prefix: 'repo:acme/app:*' },
      target: { type: 'service_account', service_account_id: acmeIds.service_accounts },
    })
  ).body.id;
  acmeIds.spend_limits = (
    await as('/spend_limits', { scope: { type: 'organization' }, amount: '100000', period: 'monthly' })
  ).body.id;
  acmeIds.rate_limits = (
    await as('/rate_limits', {
      scope: { type: 'organization' },
      limits: [{ type: 'requests_per_minute', value: 100_000 }],
    })
  ).body.id;
  acmeIds.spend_limit_increase_requests = (
    await stack.gateway.store.spendLimits.request({
      accountId: acme.id,
      memberId: acmeIds.users!,
      period: 'monthly',
      requestedCents: 200_000,
      reason: null,
    })
  ).id;
  const invoice = await issueSeatInvoice(stack.gateway.store, acme.id);
  acmeIds.invoices = invoice!.id;
  expect(Object.values(acmeIds).every((id) => typeof id === 'string')).toBe(true);
  const made = await api(stack.gateway.url, `${ACCOUNT}/api_keys`, {
    key: suspended.adminKey,
    body: { name: 'app' },
  });
  suspendedAppKey = made.body.key;
  expect(suspendedAppKey).toMatch(/^kg_live_/);
  const off = await api(stack.gateway.url, `${OPERATOR}/accounts/${suspended.id}/suspend`, {
    bearer: OPERATOR_TOKEN,
    method: 'POST',
  });
  expect(off.status).toBe(200);
});
afterAll(() => stack?.close());

describe('the route table (security)', () => {
  it('has the families this file guards, as large as they are today or larger', () => {
    expect(accountRoutes.length).toBeGreaterThanOrEqual(42);
    expect(operatorRoutes.length).toBeGreaterThanOrEqual(13 + 42);
    expect(proxyRoutes.map(([m, p]) => `${m} ${p}`)).toEqual(
      expect.arrayContaining([
        'POST /v1/messages',
        'POST /v1/messages/count_tokens',
        'GET /v1/models',
        'GET /v1/models/:id',
      ]),
    );
  });

  it('holds no route outside them but the public probes, the Stripe webhook, the docs and the dashboard (sessions)', () => {
    const elsewhere = routes
      .map(([, p]) => p)
      .filter(
        (p) =>
          !isAccount(p) &&
          !isOperator(p) &&
          !isProxy(p) &&
          !isDashboard(p) &&
          !isIdentity(p) &&
          !isClaudeGateway(p) &&
          !isCloudFront(p) &&
          !(p in OTHERWISE_GUARDED),
      );
    expect(elsewhere).toEqual([]);
  });
});

describe.each(claudeRoutes)('Claude Code gateway %s %s (security)', (method, path) => {
  it("refuses no key and another account's key (401)", async () => {
    const at = path.replace(':account', acme.id).replace(':id', 'msg_x');
    const body = method === 'POST' ? {} : undefined;
    expectRefused(await api(stack.gateway.url, at, { method, body }), 401, 'authentication_error');
    expectRefused(
      await api(stack.gateway.url, at, { method, body, bearer: stack.appKey }),
      401,
      'authentication_error',
      /another account/,
    );
  });
});

describe.each(accountRoutes)('account API %s %s (security)', (method, path) => {
  it('refuses no key and an app key (401), a suspended account (403), another account (404)', async () => {
    expectRefused(await send(method, path), 401, 'authentication_error');
    expectRefused(
      await send(method, path, { bearer: stack.appKey }),
      401,
      'authentication_error',
      /admin key/,
    );
    expectRefused(
      await send(method, path, { key: suspended.adminKey }),
      403,
      'permission_error',
      /suspended/,
    );
    // Another account's admin key may not see or touch what a path names of acme's.
    if (path.includes('/:'))
      expectRefused(await send(method, path, { key: other.adminKey }), 404, 'not_found_error');
  });
});

describe.each(operatorRoutes.map((r, i) => [...r, `127.0.0.${10 + i}`] as const))(
  'operator API %s %s (security)',
  (method, path, address) => {
    it("refuses no token, an account's admin key, an app key and a wrong token (401)", async () => {
      const tries: Record<string, string>[] = [
        {},
        { authorization: `Bearer ${acme.adminKey}` },
        { 'x-api-key': acme.adminKey },
        { authorization: `Bearer ${stack.appKey}` },
        { authorization: `Bearer ${OPERATOR_TOKEN}x` },
      ];
      for (const headers of tries)
        expectRefused(await sendFrom(address, method, path, headers), 401, 'authentication_error');
    });
  },
);

describe.each(frontRoutes)('cloud front %s %s (security)', (method, path) => {
  it('refuses no key, an admin key and a key of no account (401), a suspended account (403), in its shape', async () => {
    const at = path
      .replace(':model_id', 'anthropic.claude-haiku-4-5-20251001-v1:0')
      .replace(':model', 'claude-haiku-4-5@20251001:rawPredict');
    const bedrock = path.startsWith('/bedrock/');
    const refused = (res: ApiResponse, status: number, type: string, message?: RegExp) => {
      if (!bedrock) return expectRefused(res, status, type, message);
      expect(res.status).toBe(status);
      expect(Object.keys(res.body)).toEqual(['message']);
      expect(res.headers.get('x-amzn-errortype')).toMatch(/Exception$/);
      if (message) expect(res.body.message).toMatch(message);
    };
    const post = (auth: { bearer?: string }) =>
      api(stack.gateway.url, at, { method, body: { max_tokens: 8, messages: [] }, ...auth });
    refused(await post({}), 401, 'authentication_error');
    refused(await post({ bearer: acme.adminKey }), 401, 'authentication_error', /Admin keys/);
    refused(await post({ bearer: generateKey('live') }), 401, 'authentication_error');
    refused(await post({ bearer: suspendedAppKey }), 403, 'permission_error');
  });
});

describe.each(proxyRoutes)('proxy %s %s (security)', (method, path) => {
  it('refuses no key, an admin key and a key of no account (401), a suspended account (403)', async () => {
    expectRefused(await send(method, path.replace(':id', 'claude-sonnet-4-6')), 401, 'authentication_error');
    expectRefused(
      await send(method, path.replace(':id', 'x'), { bearer: acme.adminKey }),
      401,
      'authentication_error',
      /Admin keys/,
    );
    expectRefused(
      await send(method, path.replace(':id', 'x'), { bearer: generateKey('live') }),
      401,
      'authentication_error',
    );
    expectRefused(
      await send(method, path.replace(':id', 'x'), { bearer: suspendedAppKey }),
      403,
      'permission_error',
    );
  });
});
