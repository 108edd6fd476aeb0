import fc from 'fast-check';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BODY_LIMITS } from '../src/lib/body-limit';
import { dashboardSession, type DashboardSession } from './dashboard-http';
import { startStack, type SeededAccount, type Stack } from './harness';

/**
 * Property: whatever the body, headers and query string, every route of the dashboard, the
 * account API, the operator API and the proxy answers in its own shape (the provider's error
 * JSON on API routes, an HTML page or a redirect on the dashboard), never with a 500, and no
 * request grows the gateway's memory past its route's budget.
 */
const RUNS = Number(process.env.KEYGATE_FUZZ_RUNS ?? 300);
const MAX_BODY = 1024 * 1024;
const MB = 1024 * 1024;
/** What one request may add to the process's resident memory, by route family. */
const BUDGET_MB = { dashboard: 16, api: 32, proxy: 48 } as const;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let stack: Stack;
let acct: SeededAccount;
let session: DashboardSession;
let routes: Array<{ method: string; path: string }>;
beforeAll(async () => {
  stack = await startStack({ KEYGATE_MAX_BODY_BYTES: String(MAX_BODY), KEYGATE_BODY_IDLE_MS: '1000' });
  acct = await stack.seedAccount();
  session = await dashboardSession(stack.gateway.url, acct.adminKey);
  const seen = new Set<string>();
  routes = stack.gateway.routes
    .filter((r) => r.method !== 'ALL' && !r.path.includes('*'))
    // Signing out would end the session the other cases use.
    .filter((r) => r.path !== '/dashboard/sign-out')
    .filter((r) => !seen.has(`${r.method} ${r.path}`) && seen.add(`${r.method} ${r.path}`))
    .map(({ method, path }) => ({ method, path }));
}, 60_000);
afterAll(() => stack?.close());

const family = (path: string): keyof typeof BUDGET_MB =>
  path.startsWith('/dashboard')
    ? 'dashboard'
    : path.startsWith('/v1/messages') || path.startsWith('/v1/models')
      ? 'proxy'
      : 'api';

const hostileText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '%00',
    '../../etc/passwd',
    '<script>alert(1)</script>',
    "'; drop table accounts; --",
  ),
  fc.constantFrom('=HYPERLINK("x")', '\u001b[2J', '\r\nset-cookie: x=1', '🙂'.repeat(50), 'x'.repeat(5000)),
  fc.constantFrom('-1', '1e309', 'NaN', '9'.repeat(40), 'true', '[]', '{}', '2026-13-45T99:99:99Z'),
);
const idPart = fc.oneof(
  fc.constantFrom(
    'key_x',
    'acct_none',
    'whk_0',
    'usr_1',
    'bud_9',
    'inv_1',
    '%00',
    '%2e%2e',
    'a%2Fb',
    '%F0%9F%99%82',
  ),
  fc.stringMatching(/^[a-z0-9_-]{1,24}$/),
);
const query = fc.array(
  fc.tuple(
    fc.oneof(
      fc.constantFrom(
        'limit',
        'after_id',
        'before_id',
        'starting_at',
        'ending_at',
        'group_by[]',
        'models[]',
        'model',
        'group',
        'status',
        'period',
        'from',
        'to',
        'split',
        'format',
        'table',
        'account',
        'search',
        'member',
        'key',
      ),
      fc.string({ maxLength: 12 }),
    ),
    hostileText,
  ),
  { maxLength: 6 },
);

const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    hostileText,
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(
        hostileText,
        fc.constantFrom(
          'name',
          'url',
          'events',
          'kind',
          'plan',
          'role',
          'email',
          'status',
          'limits',
          'amount_usd',
          'time_zone',
          'token',
          '_csrf',
        ),
      ),
      tie('value'),
      { maxKeys: 5 },
    ),
  ),
})).value;

type Body = { kind: string; bytes: Buffer | string; type: string | null };
const body: fc.Arbitrary<Body> = fc.oneof(
  {
    weight: 4,
    arbitrary: jsonValue.map((v) => ({
      kind: 'json',
      bytes: JSON.stringify(v) ?? 'null',
      type: 'application/json',
    })),
  },
  {
    weight: 3,
    arbitrary: fc
      .array(
        fc.tuple(
          fc.oneof(
            hostileText,
            fc.constantFrom(
              'name',
              'kind',
              'url',
              'events',
              'plan',
              'time_zone',
              'token',
              'grace_period_seconds',
              '_csrf',
            ),
          ),
          hostileText,
        ),
        { maxLength: 6 },
      )
      .chain((pairs) =>
        fc.boolean().map((withCsrf) => ({
          kind: `form${withCsrf ? ' + csrf' : ''}`,
          bytes: new URLSearchParams([
            ...(withCsrf ? [['_csrf', session.csrf] as [string, string]] : []),
            ...pairs,
          ]).toString(),
          type: 'application/x-www-form-urlencoded',
        })),
      ),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 50, max: 50_000 }).map((d) => ({
      kind: `nested ${d}`,
      bytes: `${'['.repeat(d)}${']'.repeat(d)}`,
      type: 'application/json',
    })),
  },
  {
    weight: 2,
    arbitrary: fc
      .uint8Array({ maxLength: 3000 })
      .map((u) => ({ kind: 'bytes', bytes: Buffer.from(u), type: null })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(
        'multipart/form-data; boundary=x',
        'multipart/form-data',
        'text/plain',
        'application/json; charset=utf-16',
        'application/xml',
      )
      .map((type) => ({
        kind: `odd type ${type}`,
        bytes: '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--\r\n',
        type,
      })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(BODY_LIMITS.signIn, BODY_LIMITS.dashboardForm, BODY_LIMITS.api, MAX_BODY)
      .map((n) => ({
        kind: `over ${n}`,
        bytes: Buffer.alloc(n + 1, 'a'),
        type: 'application/json',
      })),
  },
);

const auth = fc.constantFrom('none', 'admin', 'app', 'operator', 'session', 'wrong');
const extraHeaders = fc.dictionary(
  fc.constantFrom(
    'accept',
    'origin',
    'referer',
    'x-forwarded-proto',
    'anthropic-version',
    'anthropic-beta',
    'keygate-group-id',
    'x-claude-code-session-id',
    'keygate-actor',
    'accept-encoding',
    'content-language',
  ),
  fc.stringMatching(/^[\x20-\x7e]{0,300}$/),
  { maxKeys: 4 },
);

function headersFor(who: string, type: string | null, extra: Record<string, string>): Record<string, string> {
  const h: Record<string, string> = { ...extra };
  if (type) h['content-type'] = type;
  if (who === 'admin') h['x-api-key'] = acct.adminKey;
  if (who === 'app') h.authorization = `Bearer ${stack.appKey}`;
  if (who === 'operator') h.authorization = `Bearer ${stack.gateway.operatorToken}`;
  if (who === 'wrong') h.authorization = 'Bearer kg_live_0000000000000000000000000000000000000';
  if (who === 'session') {
    h.cookie = session.cookie;
    h.origin ??= stack.gateway.url;
  }
  return h;
}

function checkShape(raw: string, res: Response, text: string, what: string): void {
  // The path as the client's URL parser sends it: an id of `%2e%2e` is a dot segment, so
  // `/claude/%2e%2e/oauth/token` reaches the gateway as `/oauth/token`, in another route's shape.
  const path = new URL(raw, 'http://gateway.test').pathname;
  expect(res.status, what).not.toBe(500);
  if (res.status < 400) return;
  const type = res.headers.get('content-type') ?? '';
  if (path.startsWith('/dashboard') && !type.startsWith('application/json')) {
    expect(type, what).toMatch(/^text\/html/);
    expect(text, what).toMatch(/^<html/);
    return;
  }
  const json = JSON.parse(text);
  // SCIM answers in its own error shape (RFC 7644 §3.12): identity providers parse that one.
  if (path.startsWith('/scim/v2')) {
    expect(json, what).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: String(res.status),
      detail: expect.any(String),
    });
    return;
  }
  // The OAuth endpoints (a Claude Code gateway sign-in, workload tokens) answer in OAuth's shape (RFC 6749 §5.2).
  if (/^\/claude\/[^/]+\/oauth\//.test(path) || path === '/v1/oauth/token') {
    expect(json, what).toMatchObject({ error: expect.any(String), error_description: expect.any(String) });
    return;
  }
  // Bedrock's InvokeModel front answers in Bedrock's shape (cloud-fronts/bedrock-answer.ts).
  if (/^\/bedrock\/model\/[^/]+\/invoke(-with-response-stream)?$/.test(path)) {
    expect(Object.keys(json), what).toEqual(['message']);
    expect(json.message, what).toEqual(expect.any(String));
    expect(res.headers.get('x-amzn-errortype'), what).toEqual(expect.any(String));
    return;
  }
  // The provider's error shape (upstream errors from the emulator are its own, passed through).
  expect(json, what).toMatchObject({
    type: 'error',
    error: { type: expect.any(String), message: expect.any(String) },
  });
}

describe('hostile requests on every route, property-based', () => {
  it(`${RUNS} generated requests: each answered in its route's shape, never 500, within its memory budget`, async () => {
    const statuses = new Map<number, number>();
    const worst: Record<string, number> = {};
    gc();
    const before = process.memoryUsage();
    await fc.assert(
      fc.asyncProperty(
        fc.nat(),
        fc.array(idPart, { minLength: 3, maxLength: 3 }),
        query,
        body,
        auth,
        extraHeaders,
        async (pick, ids, q, b, who, extra) => {
          const route = routes[pick % routes.length]!;
          let n = 0;
          const path = route.path.replace(/:[a-z_]+/g, () => ids[n++ % ids.length]!);
          const qs = q.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
          const url = `${stack.gateway.url}${path}${qs ? `?${qs}` : ''}`;
          const hasBody = route.method !== 'GET' && route.method !== 'HEAD';
          const what = `${route.method} ${path}?${qs.slice(0, 200)} as ${who}, body ${b.kind}`;
          const rssBefore = process.memoryUsage().rss;
          const res = await fetch(url, {
            method: route.method,
            redirect: 'manual',
            headers: headersFor(who, hasBody ? b.type : null, extra),
            ...(hasBody ? { body: b.bytes } : {}),
            signal: AbortSignal.timeout(20_000),
          });
          const text = await res.text();
          const grown = (process.memoryUsage().rss - rssBefore) / MB;
          const fam = family(route.path);
          worst[fam] = Math.max(worst[fam] ?? 0, grown);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (route.method !== 'HEAD') checkShape(path, res, text, what);
          expect(grown, `${what}: RSS grew ${grown.toFixed(1)} MB`).toBeLessThan(BUDGET_MB[fam]);
        },
      ),
      { numRuns: RUNS, endOnFailure: true },
    );
    gc();
    const after = process.memoryUsage();
    console.log(
      `hostile routes: ${RUNS} runs over ${routes.length} routes; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}; ` +
        `worst RSS growth per request (MB) ${JSON.stringify(Object.fromEntries(Object.entries(worst).map(([k, v]) => [k, Number(v.toFixed(1))])))}; ` +
        `heap after GC ${Math.round(before.heapUsed / MB)} → ${Math.round(after.heapUsed / MB)} MB`,
    );
    expect(stack.logs.filter((l) => l.includes('"unhandled error"'))).toEqual([]);
  }, 300_000);

  // Found by the property above. Seed 663899272: the emulator's agents, environments and
  // sessions read fields of a body that was JSON `null`, and answered 500. Seed 1966487575: every
  // dashboard form answered 500 to a multipart body without its boundary (the form could not be
  // parsed). Every route that takes a body, each such body, each credential: an answer in the
  // route's shape, never a 500.
  it('bodies that are JSON but not objects, and forms that cannot be read, on every route: never a 500', async () => {
    const withBody = routes.filter((r) => r.method === 'POST' || r.method === 'PUT' || r.method === 'PATCH');
    expect(withBody.length).toBeGreaterThan(50);
    const bodies = [
      ...['null', '[]', '1', '"x"', 'true'].map((bytes) => ({ type: 'application/json', bytes })),
      {
        type: 'multipart/form-data',
        bytes: '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--\r\n',
      },
      { type: 'multipart/form-data; boundary=x', bytes: '--x\r\nbroken' },
    ];
    for (const route of withBody) {
      const path = route.path.replace(/:[a-z_]+/g, 'x1');
      for (const { type, bytes } of bodies) {
        for (const who of ['app', 'admin', 'session', 'none']) {
          const res = await fetch(`${stack.gateway.url}${path}`, {
            method: route.method,
            redirect: 'manual',
            headers: headersFor(who, type, {}),
            body: bytes,
          });
          checkShape(
            route.path,
            res,
            await res.text(),
            `${route.method} ${path} as ${who}, ${type} body ${bytes}`,
          );
        }
      }
    }
  }, 180_000);
});
