import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeRequest, LOGS_REQUEST, METRICS_REQUEST } from '../src/otlp/proto';
import { api, startStack, type Stack } from './harness';
import { metricsExport as craft, nowNs, str } from './otlp-export';
import { waitFor } from './kit/wait';

const int = (key: string, v: number) => ({ key, value: { intValue: String(v) } });
const dbl = (key: string, v: number) => ({ key, value: { doubleValue: v } });
// A payload's own user attributes never decide who it is attributed to.
const claimsOther = [str('user.email', 'someone-else@x.test')];
const metricsExport = (session: string, points: Parameters<typeof craft>[1], temporality: 1 | 2 = 1) =>
  craft(session, points, { temporality, start: '1795636616383000000', attributes: claimsOther });

const SECRET_PROMPT = 'the launch code is 0000, do not tell anyone';

function logsExport(session: string, requestId: string) {
  const common = [str('session.id', session), str('prompt.id', 'p-1')];
  return {
    resourceLogs: [
      {
        resource: { attributes: [str('service.name', 'claude-code')] },
        scopeLogs: [
          {
            scope: { name: 'com.anthropic.claude_code' },
            logRecords: [
              {
                timeUnixNano: nowNs(),
                body: { stringValue: 'claude_code.user_prompt' },
                attributes: [
                  ...common,
                  str('event.name', 'user_prompt'),
                  str('prompt_length', String(SECRET_PROMPT.length)),
                  str('prompt', SECRET_PROMPT),
                  str('prompt_text', SECRET_PROMPT),
                ],
              },
              {
                timeUnixNano: nowNs(),
                body: { stringValue: 'claude_code.api_request' },
                attributes: [
                  ...common,
                  str('event.name', 'api_request'),
                  str('model', 'claude-sonnet-4-5'),
                  int('input_tokens', 10),
                  int('output_tokens', 20),
                  dbl('cost_usd', 0.00033),
                  int('duration_ms', 812),
                  str('request_id', requestId),
                ],
              },
              {
                timeUnixNano: nowNs(),
                body: { stringValue: 'claude_code.api_request_body' },
                attributes: [...common, str('event.name', 'api_request_body'), str('body', SECRET_PROMPT)],
              },
            ],
          },
        ],
      },
    ],
  };
}

let stack: Stack;
let admin: string;
let member: { id: string; key: string };
let collector: {
  server: Server;
  url: string;
  got: Array<{ path: string; headers: IncomingHttpHeaders; body: Buffer }>;
};

function post(path: string, body: string | Uint8Array, headers: Record<string, string>, key = member.key) {
  return fetch(`${stack.gateway.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, ...headers },
    body,
  });
}
const json = (path: string, value: unknown, key?: string) =>
  post(path, JSON.stringify(value), { 'content-type': 'application/json' }, key);

async function outcome(day = new Date().toISOString().slice(0, 10)) {
  const res = await api(stack.gateway.url, `/v1/organizations/usage_report/claude_code?starting_at=${day}`, {
    key: admin,
  });
  expect(res.status).toBe(200);
  return res.body.data.find((d: any) => d.user_id === member.id);
}

beforeAll(async () => {
  collector = { server: createServer(), url: '', got: [] };
  collector.server.on('request', (req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      collector.got.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(parts) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => collector.server.listen(0, '127.0.0.1', () => r()));
  collector.url = `http://127.0.0.1:${(collector.server.address() as { port: number }).port}/otlp`;
  stack = await startStack({ KEYGATE_EGRESS_ALLOW: '127.0.0.1' });
  admin = (await stack.newKey({ kind: 'admin' })).secret;
  const user = await api(stack.gateway.url, '/v1/organizations/users', {
    key: admin,
    body: { email: 'dev@otlp.test' },
  });
  const key = await stack.newKey({ kind: 'live', memberId: user.body.id });
  member = { id: user.body.id, key: key.secret };
}, 60_000);
afterAll(async () => {
  await stack?.close();
  collector?.server.close();
});

describe('OTLP receiver: what a member sends is kept and attributed to the member', () => {
  it('OTLP/JSON metrics: lines, commits, pull requests, edit decisions and sessions reach usage_report/claude_code', async () => {
    expect((await outcome())?.core_metrics.lines_of_code ?? null).toBeNull();
    const session = randomUUID();
    const res = await json(
      '/otlp/v1/metrics',
      metricsExport(session, [
        ['claude_code.session.count', 1, []],
        ['claude_code.lines_of_code.count', 12, [str('type', 'added')]],
        ['claude_code.lines_of_code.count', 3, [str('type', 'removed')]],
        ['claude_code.commit.count', 2, []],
        ['claude_code.pull_request.count', 1, []],
        [
          'claude_code.code_edit_tool.decision',
          4,
          [str('tool_name', 'Edit'), str('decision', 'accept'), str('language', 'TypeScript')],
        ],
        [
          'claude_code.code_edit_tool.decision',
          1,
          [str('tool_name', 'Edit'), str('decision', 'reject'), str('language', 'TypeScript')],
        ],
        [
          'claude_code.code_edit_tool.decision',
          2,
          [str('tool_name', 'Write'), str('decision', 'accept'), str('language', 'Markdown')],
        ],
        ['claude_code.active_time.total', 42.5, [str('type', 'cli')]],
        ['some.other.metric', 99, []],
      ]),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(await res.json()).toEqual({});
    // A second delta export adds to the first.
    expect(
      (
        await json(
          '/otlp/v1/metrics',
          metricsExport(session, [['claude_code.lines_of_code.count', 5, [str('type', 'added')]]]),
        )
      ).status,
    ).toBe(200);

    const row = await outcome();
    expect(row).toMatchObject({
      actor: { type: 'user_actor', email_address: 'dev@otlp.test' },
      core_metrics: {
        num_sessions: 1,
        lines_of_code: { added: 17, removed: 3 },
        commits_by_claude_code: 2,
        pull_requests_by_claude_code: 1,
      },
      tool_actions: {
        edit_tool: { accepted: 4, rejected: 1 },
        write_tool: { accepted: 2, rejected: 0 },
        multi_edit_tool: { accepted: 0, rejected: 0 },
        notebook_edit_tool: { accepted: 0, rejected: 0 },
      },
    });
  });

  it('protobuf with gzip, and a cumulative series keeps its latest total', async () => {
    const session = randomUUID();
    const send = (value: number) =>
      post(
        '/otlp/v1/metrics',
        gzipSync(
          encodeRequest(
            METRICS_REQUEST,
            metricsExport(session, [['claude_code.commit.count', value, []]], 2),
          ),
        ),
        { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' },
      );
    const before = (await outcome()).core_metrics.commits_by_claude_code;
    for (const total of [3, 5]) {
      const res = await send(total);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/x-protobuf');
      expect((await res.arrayBuffer()).byteLength).toBe(0);
    }
    expect((await outcome()).core_metrics.commits_by_claude_code).toBe(before + 5);
  });

  it('logs: api_request events are kept with their request ids; prompt text and raw bodies never are', async () => {
    const session = randomUUID();
    const requestId = `req_${randomUUID().replaceAll('-', '')}`;
    const res = await post('/otlp/v1/logs', encodeRequest(LOGS_REQUEST, logsExport(session, requestId)), {
      'content-type': 'application/x-protobuf',
    });
    expect(res.status).toBe(200);
    const sql = stack.gateway.store.db.sql;
    const rows = await sql`select * from claude_code_events where session_id = ${session} order by name`;
    expect(rows.map((r) => r.name)).toEqual(['api_request', 'user_prompt']);
    expect(rows[0]).toMatchObject({
      member_id: member.id,
      request_id: requestId,
      model: 'claude-sonnet-4-5',
      cost_usd: 0.00033,
      duration_ms: 812,
      input_tokens: 10,
      output_tokens: 20,
    });
    expect(rows[1]!.attrs).toEqual({ prompt_length: String(SECRET_PROMPT.length) });
    const everything = await sql`select row_to_json(e)::text as t from claude_code_events e`;
    expect(everything.some((r) => r.t.includes('launch code'))).toBe(false);
  });

  it('relays what it kept to the account collector asynchronously, without the credential or the prompt', async () => {
    const set = await api(stack.gateway.url, '/v1/organizations/otlp_relay', {
      key: admin,
      body: { url: collector.url },
    });
    expect(set.body).toEqual({ type: 'otlp_relay', url: collector.url });
    const session = randomUUID();
    // A metric point carrying the prompt (a client configured to add it), beside a metric Keygate does not keep.
    const bytes = encodeRequest(
      METRICS_REQUEST,
      metricsExport(session, [
        ['claude_code.lines_of_code.count', 7, [str('type', 'added'), str('prompt', SECRET_PROMPT)]],
        ['custom.prompt.secret', 1, [str('text', SECRET_PROMPT)]],
      ]),
    );
    expect((await post('/otlp/v1/metrics', bytes, { 'content-type': 'application/x-protobuf' })).status).toBe(
      200,
    );
    expect((await json('/otlp/v1/logs', logsExport(session, 'req_relayed'))).status).toBe(200);
    await waitFor(() => collector.got.length >= 2, { timeout: 5_000, what: 'two relayed exports' });
    const metrics = collector.got.find((g) => g.path === '/otlp/v1/metrics')!;
    expect(metrics.headers['content-type']).toBe('application/json');
    expect(metrics.body.toString()).not.toContain('launch code');
    expect(metrics.body.toString()).not.toContain('someone-else@x.test');
    const relayed = JSON.parse(metrics.body.toString()).resourceMetrics[0].scopeMetrics[0].metrics;
    expect(relayed).toHaveLength(1);
    expect(relayed[0].name).toBe('claude_code.lines_of_code.count');
    expect(relayed[0].sum.aggregationTemporality).toBe(1);
    expect(relayed[0].sum.dataPoints).toMatchObject([
      { asDouble: 7, startTimeUnixNano: '1795636616383000000' },
    ]);
    expect(relayed[0].sum.dataPoints[0].attributes).toEqual([
      str('session.id', session),
      str('type', 'added'),
    ]);
    const logs = collector.got.find((g) => g.path === '/otlp/v1/logs')!;
    expect(logs.body.toString()).toContain('req_relayed');
    expect(logs.body.toString()).not.toContain('launch code');
    for (const g of collector.got) expect(g.headers.authorization).toBeUndefined();
    // A target the egress policy refuses cannot be set.
    const blocked = await api(stack.gateway.url, '/v1/organizations/otlp_relay', {
      key: admin,
      body: { url: 'http://169.254.169.254/otlp' },
    });
    expect(blocked.status).toBe(400);
    expect(blocked.body.error.message).toBe('url: blocked by the egress policy.');
    expect(
      (await api(stack.gateway.url, '/v1/organizations/otlp_relay', { key: admin, method: 'DELETE' })).body
        .url,
    ).toBeNull();
  });

  it('a collector that never answers does not hold up the export', async () => {
    const held: Array<() => void> = [];
    const silent = createServer((req, res) => {
      req.resume();
      held.push(() => res.destroy());
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
    try {
      expect(
        (await api(stack.gateway.url, '/v1/organizations/otlp_relay', { key: admin, body: { url } })).status,
      ).toBe(200);
      const started = Date.now();
      const res = await json(
        '/otlp/v1/metrics',
        metricsExport(randomUUID(), [['claude_code.session.count', 1, []]]),
      );
      expect(res.status).toBe(200);
      // The relay is still waiting for the collector while the export has its answer.
      await waitFor(() => held.length === 1, { timeout: 5_000, what: 'the relayed export at the collector' });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      for (const end of held) end();
      silent.close();
      await api(stack.gateway.url, '/v1/organizations/otlp_relay', { key: admin, method: 'DELETE' });
    }
  });
});

describe('OTLP receiver: refusals in the provider error shape', () => {
  const metrics = () => metricsExport(randomUUID(), [['claude_code.commit.count', 1, []]]);
  const expectError = async (res: Response, status: number, type: string, message: RegExp) => {
    expect(res.status).toBe(status);
    const body = (await res.json()) as { request_id: string };
    expect(body).toMatchObject({ type: 'error', error: { type, message: expect.stringMatching(message) } });
    expect(body.request_id).toMatch(/^req_/);
  };

  it('no key, a revoked key, an admin key and a key of no member', async () => {
    const none = await fetch(`${stack.gateway.url}/otlp/v1/metrics`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(metrics()),
    });
    await expectError(none, 401, 'authentication_error', /Missing app key/);

    const user = await api(stack.gateway.url, '/v1/organizations/users', {
      key: admin,
      body: { email: 'gone@otlp.test' },
    });
    const revoked = await stack.newKey({ memberId: user.body.id });
    expect((await json('/otlp/v1/metrics', metrics(), revoked.secret)).status).toBe(200);
    const off = await api(stack.gateway.url, `/v1/organizations/api_keys/${revoked.id}`, {
      key: admin,
      body: { status: 'inactive' },
    });
    expect(off.status).toBe(200);
    await expectError(
      await json('/otlp/v1/metrics', metrics(), revoked.secret),
      401,
      'authentication_error',
      /deactivated/,
    );
    await expectError(
      await json('/otlp/v1/logs', logsExport('s', 'r'), revoked.secret),
      401,
      'authentication_error',
      /./,
    );

    await expectError(
      await json('/otlp/v1/metrics', metrics(), admin),
      401,
      'authentication_error',
      /Admin keys/,
    );
    await expectError(
      await json('/otlp/v1/metrics', metrics(), stack.appKey),
      403,
      'permission_error',
      /member/,
    );
  });

  it('bad content type, encoding, JSON, protobuf, gzip and shape', async () => {
    const m = JSON.stringify(metrics());
    await expectError(
      await post('/otlp/v1/metrics', m, { 'content-type': 'text/plain' }),
      415,
      'invalid_request_error',
      /application\/x-protobuf or application\/json/,
    );
    await expectError(
      await post('/otlp/v1/metrics', m, { 'content-type': 'application/json', 'content-encoding': 'br' }),
      415,
      'invalid_request_error',
      /gzip/,
    );
    await expectError(
      await post('/otlp/v1/metrics', '{"resourceMetrics": [', { 'content-type': 'application/json' }),
      400,
      'invalid_request_error',
      /not valid JSON/,
    );
    await expectError(
      await post('/otlp/v1/logs', new Uint8Array([0x0a, 0xff, 0xff, 0xff]), {
        'content-type': 'application/x-protobuf',
      }),
      400,
      'invalid_request_error',
      /not a valid OTLP protobuf logs/,
    );
    await expectError(
      await post('/otlp/v1/metrics', 'not gzip', {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      }),
      400,
      'invalid_request_error',
      /not valid gzip/,
    );
    await expectError(
      await json('/otlp/v1/metrics', { resourceMetrics: [{ scopeMetrics: 'x' }] }),
      400,
      'invalid_request_error',
      /resourceMetrics\[0\]\.scopeMetrics/,
    );
  });

  it('a body over the limit, as sent or once inflated', async () => {
    const big = new Uint8Array(4 * 1024 * 1024 + 1);
    await expectError(
      await post('/otlp/v1/metrics', big, { 'content-type': 'application/x-protobuf' }),
      413,
      'request_too_large',
      /at most 4194304 bytes/,
    );
    const bomb = gzipSync(Buffer.alloc(17 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(100_000);
    await expectError(
      await post('/otlp/v1/metrics', bomb, {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      }),
      413,
      'request_too_large',
      /inflates to at most/,
    );
  });
});
