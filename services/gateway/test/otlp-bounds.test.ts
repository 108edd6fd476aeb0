import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeRequest,
  encodeRequest,
  LOGS_REQUEST,
  LOGS_RESPONSE,
  METRICS_REQUEST,
} from '../src/otlp/proto';
import { MAX_VALUE_LENGTH } from '../src/otlp/read';
import { api, startStack, type Stack } from './harness';
import { metricsExport, nowNs, str } from './otlp-export';

let stack: Stack;
let memberKey: string;

beforeAll(async () => {
  stack = await startStack();
  const admin = (await stack.newKey({ kind: 'admin' })).secret;
  const user = await api(stack.gateway.url, '/v1/organizations/users', {
    key: admin,
    body: { email: 'dev@otlp-bounds.test' },
  });
  memberKey = (await stack.newKey({ kind: 'live', memberId: user.body.id })).secret;
}, 60_000);
afterAll(async () => {
  await stack?.close();
});

const send = (path: string, body: Uint8Array, type: string) =>
  fetch(`${stack.gateway.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${memberKey}`, 'content-type': type, 'content-encoding': 'gzip' },
    body: gzipSync(body),
  });
const sendJson = (path: string, value: unknown) =>
  send(path, Buffer.from(JSON.stringify(value)), 'application/json');

const apiRequest = (session: string, i: number, extra: ReturnType<typeof str>[] = []) => ({
  timeUnixNano: nowNs(),
  body: { stringValue: 'claude_code.api_request' },
  attributes: [
    str('session.id', session),
    str('event.name', 'api_request'),
    str('request_id', `req_${i}`),
    str('model', 'claude-sonnet-4-5'),
    ...extra,
  ],
});
const logs = (records: unknown[]) => ({ resourceLogs: [{ scopeLogs: [{ logRecords: records }] }] });

describe('OTLP receiver: any export the receiver accepts is stored', () => {
  it('5,000 log records in one export (80,000 values: more than one statement can bind)', async () => {
    const session = randomUUID();
    const res = await sendJson(
      '/otlp/v1/logs',
      logs(Array.from({ length: 5_000 }, (_, i) => apiRequest(session, i))),
    );
    expect(res.status, await res.clone().text()).toBe(200);
    expect(await res.json()).toEqual({});
    const [row] = await stack.gateway.store.db.sql`
      select count(*)::int as n, count(distinct request_id)::int as ids
      from claude_code_events where session_id = ${session}`;
    expect(row).toEqual({ n: 5_000, ids: 5_000 });
  });

  it('8,000 metric points of distinct series in one export', async () => {
    const sessions = Array.from({ length: 8_000 }, () => randomUUID());
    const exports = sessions.map((s) => metricsExport(s, [['claude_code.session.count', 1, []]]));
    const body = { resourceMetrics: exports.flatMap((e) => e.resourceMetrics) };
    const res = await send(
      '/otlp/v1/metrics',
      encodeRequest(METRICS_REQUEST, body),
      'application/x-protobuf',
    );
    expect(res.status, await res.clone().text()).toBe(200);
    const [row] = await stack.gateway.store.db.sql`
      select count(*)::int as n from claude_code_metrics where session_id in ${stack.gateway.store.db.sql(sessions)}`;
    expect(row!.n).toBe(8_000);
  });
});

describe('OTLP receiver: kept values are bounded', () => {
  const long = 'x'.repeat(2 * 1024 * 1024);

  it('refuses a log record with an over-long kept value, says so as a partial success, keeps the rest', async () => {
    const session = randomUUID();
    const body = logs([
      apiRequest(session, 1),
      apiRequest(session, 2, [str('tool_name', long)]),
      apiRequest(session, 3, [str('model', 'm'.repeat(MAX_VALUE_LENGTH + 1))]),
      // Not kept, so not judged: an attribute the receiver drops anyway.
      apiRequest(session, 4, [str('prompt', long)]),
      apiRequest(session, 5, [str('tool_name', 't'.repeat(MAX_VALUE_LENGTH))]),
    ]);
    const res = await sendJson('/otlp/v1/logs', body);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      partialSuccess: {
        rejectedLogRecords: '2',
        errorMessage: `2 refused: a kept attribute value is longer than ${MAX_VALUE_LENGTH} characters`,
      },
    });
    const rows = await stack.gateway.store.db.sql`
      select request_id from claude_code_events where session_id = ${session} order by request_id`;
    expect(rows.map((r) => r.request_id)).toEqual(['req_1', 'req_4', 'req_5']);

    // The same answer in protobuf, for a protobuf export.
    const again = await send('/otlp/v1/logs', encodeRequest(LOGS_REQUEST, body), 'application/x-protobuf');
    expect(again.status).toBe(200);
    expect(again.headers.get('content-type')).toBe('application/x-protobuf');
    expect(decodeRequest(LOGS_RESPONSE, new Uint8Array(await again.arrayBuffer()))).toEqual({
      partialSuccess: {
        rejectedLogRecords: '2',
        errorMessage: `2 refused: a kept attribute value is longer than ${MAX_VALUE_LENGTH} characters`,
      },
    });
  });

  it('refuses a metric point with an over-long breakdown value or session', async () => {
    const session = randomUUID();
    const res = await sendJson(
      '/otlp/v1/metrics',
      metricsExport(session, [
        ['claude_code.code_edit_tool.decision', 1, [str('tool_name', long)]],
        ['claude_code.commit.count', 1, []],
      ]),
    );
    expect(res.status).toBe(200);
    expect(((await res.json()) as { partialSuccess: unknown }).partialSuccess).toMatchObject({
      rejectedDataPoints: '1',
    });
    const rows = await stack.gateway.store.db.sql`
      select metric from claude_code_metrics where session_id = ${session}`;
    expect(rows.map((r) => r.metric)).toEqual(['claude_code.commit.count']);
  });
});
