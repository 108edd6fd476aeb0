import { ACCOUNT_API, DASHBOARD } from './endpoint-paths';
import { BODIES, family, type Endpoint, type PathRef } from './endpoint-row';

/**
 * Every endpoint the gateway serves: one row per (method, path pattern) as the app registers it,
 * with its answer shape, credentials, body and bounds, the objects and models it names, the
 * limits it is held to and how a call is recorded. endpoints.test.ts holds the app's route
 * table to it (a route without a row, or a row without a route, fails), and
 * test/endpoint-guarantees.test.ts runs the generated cases over every row.
 */

/** `/users/:id` names a user of the caller's account: another account's id is not found. */
const accountObject = (collection: string, param: string): PathRef | null => {
  if (param === 'account_id' || param === 'plan_id' || param === 'file') return null;
  const kind = param === 'id' ? collection.replace(/s$/, '') : param.replace(/_id$/, '');
  return { param, kind, owner: 'account' };
};

/** The provider's objects Keygate attributes: another member's is not found unless shared with the caller. */
const providerObject = (collection: string, param: string): PathRef | null => {
  const kind = {
    files: 'file',
    batches: 'batch',
    skills: 'skill',
    sessions: 'session',
    agents: 'agent',
    environments: 'environment',
  }[collection];
  return kind ? { param, kind: kind as PathRef['kind'], owner: 'member' } : null;
};

const api = { kind: 'reader', spec: BODIES.api } as const;
const none = { kind: 'none' } as const;

/** Fields of account API bodies that name the account's members, keys and groups. */
const ACCOUNT_BODY_REFS: Record<string, Endpoint['bodyRefs']> = {
  'POST /api_keys': [{ at: 'member_id', kind: 'user' }],
  'POST /budgets': [{ at: 'target_id', kind: 'budget target' }],
  'POST /invites': [{ at: 'rbac_group_ids[]', kind: 'rbac_group' }],
  'POST /rbac_groups/:id/members': [{ at: 'user_id', kind: 'user' }],
  'POST /spend_limits': [
    { at: 'scope.user_id', kind: 'user' },
    { at: 'scope.rbac_group_id', kind: 'rbac_group' },
  ],
  'POST /rate_limits': [
    { at: 'scope.user_id', kind: 'user' },
    { at: 'scope.rbac_group_id', kind: 'rbac_group' },
    { at: 'scope.api_key_id', kind: 'api_key' },
  ],
  'POST /model_policies': [
    { at: 'scope.user_id', kind: 'user' },
    { at: 'scope.rbac_group_id', kind: 'rbac_group' },
    { at: 'scope.api_key_id', kind: 'api_key' },
  ],
};

const withAccountRefs = (rows: Endpoint[], prefix: string): Endpoint[] =>
  rows.map((row) => {
    const refs = ACCOUNT_BODY_REFS[`${row.method} ${row.path.slice(prefix.length)}`];
    return refs ? { ...row, bodyRefs: refs } : row;
  });

const ADMIN = {
  face: 'provider',
  credentials: ['admin-key'],
  writes: api,
  objects: accountObject,
  limits: 'none',
  recording: 'audit',
} as const;
const OPERATOR = { ...ADMIN, credentials: ['operator-token'], limits: 'per-address' } as const;
const OPERATOR_ACCOUNT = '/operator/v1/accounts/:account_id';
/** Claude Code's base for an account (claude-gateway/routes.ts CLAUDE_BASE). */
const CLAUDE_CODE_BASE = '/claude/:account';

/** The provider's endpoints Keygate serves: admitted per call and recorded in the call log. */
const PROVIDER = {
  face: 'provider',
  credentials: ['app-key'],
  writes: { kind: 'proxied' },
  objects: providerObject,
  limits: 'per-call',
  recording: 'call-log',
} as const;
const OWNED = ['skills', 'sessions', 'agents', 'environments'].flatMap((family) => [
  `POST /v1/${family}`,
  `GET /v1/${family}`,
  ...['GET', 'POST', 'DELETE', 'PATCH', 'PUT'].flatMap((m) => [
    `${m} /v1/${family}/:id`,
    `${m} /v1/${family}/:id/*`,
  ]),
]);

const PUBLIC = {
  face: 'probe',
  credentials: ['none'],
  writes: none,
  limits: 'none',
  recording: 'none',
} as const;

export const ENDPOINTS: readonly Endpoint[] = [
  ...family(PUBLIC, ['GET /healthz', 'GET /health', 'GET /readyz', 'GET /api/hello', 'HEAD /api/hello']),
  ...family({ ...PUBLIC, face: 'page' }, [
    'GET /',
    'HEAD /',
    'GET /favicon.ico',
    'HEAD /favicon.ico',
    'GET /docs',
    'GET /openapi.json',
  ]),
  ...family(PROVIDER, [
    'POST /v1/messages',
    'POST /v1/messages/count_tokens',
    'GET /v1/models',
    'GET /v1/models/:id',
    ...OWNED,
  ]),
  // Bedrock InvokeModel and Vertex rawPredict in front of the messages pipeline (cloud-fronts/):
  // Bedrock's answers and errors in Bedrock's shape, Vertex's in the provider's (as Vertex answers for Claude).
  ...family(
    { ...PROVIDER, face: 'bedrock' },
    ['POST /model/:model_id/invoke', 'POST /model/:model_id/invoke-with-response-stream'],
    '/bedrock',
  ),
  ...family(
    PROVIDER,
    ['POST /projects/:project/locations/:location/publishers/anthropic/models/:model'],
    '/vertex/v1',
  ),
  // The caller's own spend limits and spend (`keygate statusline`): read, never recorded.
  ...family({ ...PROVIDER, writes: none, limits: 'none', recording: 'none' }, ['GET /keygate/v1/spend']),
  ...family(
    { ...PROVIDER, writes: none, limits: 'none', recording: 'none' },
    ['GET /keygate/v1/spend'],
    CLAUDE_CODE_BASE,
  ),
  // A resumable stream's events, read back: the call that made them is the one recorded.
  ...family({ ...PROVIDER, limits: 'none', recording: 'none' }, ['GET /v1/messages/:id/events']),
  ...family({ ...PROVIDER, writes: { kind: 'upload' } }, ['POST /v1/files']),
  // Files and batches by id take no body: files-routes.ts and batch-routes.ts forward none.
  ...family({ ...PROVIDER, writes: none }, [
    'GET /v1/files',
    'GET /v1/files/:id',
    'DELETE /v1/files/:id',
    'GET /v1/files/:id/content',
  ]),
  ...family({ ...PROVIDER, writes: { kind: 'reader', spec: BODIES.batch } }, ['POST /v1/messages/batches']),
  ...family({ ...PROVIDER, writes: none }, [
    'GET /v1/messages/batches',
    'GET /v1/messages/batches/:id',
    'DELETE /v1/messages/batches/:id',
    'POST /v1/messages/batches/:id/cancel',
    'GET /v1/messages/batches/:id/results',
  ]),
  // `/v1/v1/…`: a base URL that already ends in /v1 (any method), answered with what to change.
  ...family({ ...PROVIDER, writes: none, limits: 'none', recording: 'none' }, ['ALL /v1/v1/*']),
  ...family(
    {
      ...PROVIDER,
      face: 'otlp',
      writes: { kind: 'reader', spec: BODIES.otlp },
      limits: 'none',
      recording: 'none',
    },
    ['POST /otlp/v1/metrics', 'POST /otlp/v1/logs'],
  ),
  // Claude Code's gateway sign-in (claude-gateway/): its base is `/claude/{account}`, under which
  // the calls, the model list and the telemetry are the routes above, mounted again.
  ...family({ face: 'oauth', credentials: ['none'], writes: none, limits: 'none', recording: 'none' }, [
    'GET /claude/:account/.well-known/oauth-authorization-server',
  ]),
  ...family(
    {
      face: 'oauth',
      credentials: ['idp-grant'],
      writes: { kind: 'reader', spec: BODIES.claudeOauth },
      limits: 'per-address',
      recording: 'none',
    },
    ['POST /oauth/device_authorization', 'POST /oauth/token'],
    CLAUDE_CODE_BASE,
  ),
  ...family(
    { ...PROVIDER, writes: none, limits: 'none', recording: 'none' },
    ['GET /managed/settings'],
    CLAUDE_CODE_BASE,
  ),
  ...family(
    PROVIDER,
    ['POST /v1/messages', 'POST /v1/messages/count_tokens', 'GET /v1/models', 'GET /v1/models/:id'],
    CLAUDE_CODE_BASE,
  ),
  ...family(
    { ...PROVIDER, limits: 'none', recording: 'none' },
    ['GET /v1/messages/:id/events'],
    CLAUDE_CODE_BASE,
  ),
  ...family(
    {
      ...PROVIDER,
      face: 'otlp',
      writes: { kind: 'reader', spec: BODIES.otlp },
      limits: 'none',
      recording: 'none',
    },
    ['POST /v1/metrics', 'POST /v1/logs', 'POST /v1/traces'],
    CLAUDE_CODE_BASE,
  ),
  ...withAccountRefs(family(ADMIN, ACCOUNT_API, '/v1/organizations'), '/v1/organizations'),
  ...withAccountRefs(
    family(
      OPERATOR,
      [
        ...ACCOUNT_API,
        'POST /mark_paid',
        'POST /provider_key',
        'POST /reactivate',
        'POST /set_trial',
        'POST /suspend',
      ],
      OPERATOR_ACCOUNT,
    ),
    OPERATOR_ACCOUNT,
  ),
  // The operator's own routes name accounts and keys of every account: no ownership applies.
  ...family(
    { ...OPERATOR, objects: () => null },
    [
      'GET /accounts',
      'POST /accounts',
      'GET /accounts/:account_id',
      'POST /accounts/:account_id',
      'GET /api_keys/:key_id',
      'GET /plans',
      'POST /plans/:plan_id',
      'GET /prices',
      'POST /prices',
      'GET /usage',
      'POST /billing/clock',
    ],
    '/operator/v1',
  ),
  ...family(
    {
      face: 'scim',
      credentials: ['scim-token'],
      writes: api,
      objects: accountObject,
      limits: 'none',
      recording: 'audit',
    },
    [
      'GET /Users',
      'POST /Users',
      'GET /Users/:id',
      'PUT /Users/:id',
      'PATCH /Users/:id',
      'DELETE /Users/:id',
      'GET /Groups',
      'POST /Groups',
      'GET /Groups/:id',
      'PUT /Groups/:id',
      'PATCH /Groups/:id',
      'DELETE /Groups/:id',
    ],
    '/scim/v2',
  ),
  ...family(
    {
      face: 'provider',
      credentials: ['idp-grant'],
      writes: { kind: 'reader', spec: BODIES.idp },
      limits: 'per-address',
      recording: 'none',
    },
    ['POST /idp/v1/device/code', 'POST /idp/v1/device/token', 'POST /idp/v1/token'],
  ),
  ...family(
    {
      face: 'oauth',
      credentials: ['jwt-assertion'],
      writes: { kind: 'reader', spec: BODIES.workloadToken },
      limits: 'per-address',
      recording: 'audit',
    },
    ['POST /v1/oauth/token'],
  ),
  ...family(
    {
      face: 'provider',
      credentials: ['stripe-signature'],
      writes: { kind: 'reader', spec: BODIES.stripeWebhook },
      limits: 'none',
      recording: 'none',
    },
    ['POST /billing/stripe/webhook'],
  ),
  ...family(
    {
      face: 'page',
      credentials: ['none'],
      writes: { kind: 'reader', spec: BODIES.signIn },
      limits: 'per-address',
      recording: 'none',
    },
    ['GET /sign-in', 'POST /sign-in', 'GET /sign-in/idp', 'GET /sign-in/idp/callback'],
    '/dashboard',
  ),
  ...family(
    {
      face: 'page',
      credentials: ['dashboard-session'],
      writes: { kind: 'reader', spec: BODIES.dashboardForm },
      objects: accountObject,
      limits: 'none',
      recording: 'audit',
    },
    DASHBOARD.filter((line) => !line.includes('/sign-in')),
    '/dashboard',
  ),
];
