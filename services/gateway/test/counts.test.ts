import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startStack, type SeededAccount, type Stack } from './harness';
import { runKeygate } from './cli-runner';
import { waitFor } from './kit/wait';

const MODEL = 'claude-opus-4-5';
const TOKEN = 'operator-token-0123456789';
const body = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    model: MODEL,
    max_tokens: 32,
    messages: [{ role: 'user', content: 'count me' }],
    ...extra,
  });

let stack: Stack;
let acct: SeededAccount;
let keys: Record<'main' | 'limited', { id: string; key: string }>;
const startedAt = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000);

/** One call of the workload: how it is made, and what the gateway must answer. */
interface Case {
  name: string;
  key?: 'main' | 'limited';
  body?: string;
  headers?: Record<string, string>;
  /** Leave after the first chunk of the answer, or after this many ms without one. */
  leave?: 'after-first-chunk' | number;
  status: number;
  error: boolean;
}

const CASES: Case[] = [
  { name: 'served', status: 200, error: false },
  { name: 'served', status: 200, error: false },
  { name: 'served', status: 200, error: false },
  { name: 'served stream', body: body({ stream: true }), status: 200, error: false },
  { name: 'served stream', body: body({ stream: true }), status: 200, error: false },
  {
    name: 'refused: no max_tokens',
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }),
    status: 400,
    error: true,
  },
  {
    name: 'refused: bad group id',
    headers: { 'keygate-group-id': 'x'.repeat(200) },
    status: 400,
    error: true,
  },
  {
    name: 'refused: body over the limit',
    body: body({ metadata: { pad: 'x'.repeat(80_000) } }),
    status: 413,
    error: true,
  },
  { name: 'upstream 400', headers: { 'x-emulator-scenario': 'invalid_request' }, status: 400, error: true },
  { name: 'upstream 429', headers: { 'x-emulator-scenario': 'rate_limit' }, status: 429, error: true },
  { name: 'upstream 500', headers: { 'x-emulator-scenario': 'api_error' }, status: 500, error: true },
  { name: 'upstream 529', headers: { 'x-emulator-scenario': 'overloaded' }, status: 529, error: true },
  { name: 'upstream 529', headers: { 'x-emulator-scenario': 'overloaded' }, status: 529, error: true },
  {
    name: 'stream error after 200',
    body: body({ stream: true }),
    headers: { 'x-emulator-scenario': 'stream_error' },
    status: 200,
    error: true,
  },
  {
    name: 'stream error after 200',
    body: body({ stream: true }),
    headers: { 'x-emulator-scenario': 'stream_error' },
    status: 200,
    error: true,
  },
  {
    name: 'stream cut',
    body: body({ stream: true }),
    headers: { 'x-emulator-scenario': 'stream_cut' },
    status: 200,
    error: true,
  },
  {
    name: 'client leaves mid-stream',
    body: body({ stream: true }),
    headers: { 'x-emulator-scenario': 'paced', 'x-emulator-interval-ms': '100' },
    leave: 'after-first-chunk',
    status: 200,
    error: true,
  },
  {
    name: 'client leaves before the answer',
    headers: { 'x-emulator-scenario': 'slow_first_byte', 'x-emulator-delay-ms': '800' },
    leave: 200,
    status: 499,
    error: true,
  },
  {
    name: 'timeout before the answer',
    headers: { 'x-emulator-scenario': 'slow_first_byte', 'x-emulator-delay-ms': '3000' },
    status: 504,
    error: true,
  },
  {
    name: 'timeout mid-stream',
    body: body({ stream: true }),
    headers: { 'x-emulator-scenario': 'paced', 'x-emulator-interval-ms': '2500' },
    status: 200,
    error: true,
  },
  { name: 'served under a rate limit', key: 'limited', status: 200, error: false },
  { name: 'refused: rate limit', key: 'limited', status: 429, error: true },
];

const COUNT = { main: { requests: 20, errors: 15 }, limited: { requests: 2, errors: 1 } };
const TOTAL = { requests: 22, errors: 16 };

/** Makes one call; returns the status the client saw (499 when it left before any answer). */
async function run(c: Case): Promise<number> {
  const abort = new AbortController();
  const timer = typeof c.leave === 'number' ? setTimeout(() => abort.abort(), c.leave) : undefined;
  try {
    const res = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${keys[c.key ?? 'main'].key}`,
        'content-type': 'application/json',
        ...c.headers,
      },
      body: c.body ?? body(),
      signal: abort.signal,
    });
    if (c.leave === 'after-first-chunk') {
      await res.body!.getReader().read();
      abort.abort();
    } else {
      await res.arrayBuffer().catch(() => null);
    }
    return res.status;
  } catch (err) {
    if (abort.signal.aborted) return 499;
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until the call log holds `n` calls of the account (a call is recorded when its upstream exchange ends). */
async function callsOf(n: number): Promise<Record<string, any>[]> {
  return waitFor(
    async () => {
      await stack.gateway.writer.flush();
      const rows = await stack.gateway.store.db
        .sql`select key_id, status, error_type from calls where account_id = ${acct.id}`;
      return rows.length >= n && rows;
    },
    { timeout: 10_000, interval: 50, what: `${n} calls in the call log` },
  );
}

beforeAll(async () => {
  stack = await startStack({
    KEYGATE_UPSTREAM_TIMEOUT_MS: '1000',
    KEYGATE_MAX_BODY_BYTES: String(64 * 1024),
  });
  acct = await stack.seedAccount({ name: 'Counts', trialDays: 14 });
  const create = async (b: object) =>
    (await api(stack.gateway.url, '/v1/organizations/api_keys', { key: acct.adminKey, body: b })).body;
  keys = {
    main: await create({ name: 'main' }),
    limited: await create({ name: 'limited', limits: { requests_per_minute: 1 } }),
  };
  const statuses: number[] = [];
  for (const c of CASES) statuses.push(await run(c));
  // What the client saw for a call that broke after its 200 is still that 200.
  expect(statuses).toEqual(CASES.map((c) => c.status));
  await callsOf(CASES.length);
}, 60_000);
afterAll(() => stack?.close());

const get = (path: string) => api(stack.gateway.url, path, { key: acct.adminKey }).then((r) => r.body);
const op = (path: string) =>
  api(stack.gateway.url, `/operator/v1${path}`, { bearer: TOKEN }).then((r) => r.body);
const range = () =>
  `starting_at=${startedAt.toISOString()}&ending_at=${new Date(Date.now() + 3_600_000).toISOString()}`;
const counts = (r: { requests: number; errors: number }) => ({ requests: r.requests, errors: r.errors });
const byKey = (rows: any[]) =>
  Object.fromEntries(
    rows.map((r) => [
      r.api_key_id === keys.main.id ? 'main' : r.api_key_id === keys.limited.id ? 'limited' : r.api_key_id,
      counts(r),
    ]),
  );
const sum = (rows: any[]) =>
  rows.reduce((t, r) => ({ requests: t.requests + r.requests, errors: t.errors + r.errors }), {
    requests: 0,
    errors: 0,
  });

describe('requests = every call, errors = the calls among them that failed, in every report', () => {
  it('the call log holds every call, with the status the client saw and an error type on each failure', async () => {
    const rows = await callsOf(CASES.length);
    expect(rows).toHaveLength(CASES.length);
    const failed = rows.filter((r) => r.status >= 400 || r.error_type !== null);
    expect(failed).toHaveLength(TOTAL.errors);
    expect(
      rows
        .filter((r) => r.status === 200 && r.error_type !== null)
        .map((r) => r.error_type)
        .sort(),
    ).toEqual(['api_error', 'client_closed', 'overloaded_error', 'overloaded_error', 'timeout_error']);
    expect(rows.map((r) => r.status).sort()).toEqual(CASES.map((c) => c.status).sort());
  });

  it('usage summary by key (account API)', async () => {
    expect(byKey((await get(`/v1/organizations/usage_summary?by=key&${range()}`)).data)).toEqual(COUNT);
    expect(counts((await get(`/v1/organizations/usage_summary?by=member&${range()}`)).data[0])).toEqual(
      TOTAL,
    );
  });

  it('usage report: day buckets (rollups) and minute buckets (call log) agree', async () => {
    const day = await get(
      `/v1/organizations/usage_report/messages?starting_at=${startedAt.toISOString()}&group_by[]=api_key_id`,
    );
    expect(byKey(day.data.flatMap((b: any) => b.results))).toEqual(COUNT);
    const minutes = await get(
      `/v1/organizations/usage_report/messages?starting_at=${new Date(Date.now() - 50 * 60_000).toISOString()}&bucket_width=1m&limit=60`,
    );
    expect(sum(minutes.data.flatMap((b: any) => b.results))).toEqual(TOTAL);
  });

  it('operator API: cross-account usage and the account’s own summary', async () => {
    const all = (await op(`/usage?by=account&${range()}`)).data;
    expect(counts(all.find((r: any) => r.account_id === acct.id))).toEqual(TOTAL);
    expect(byKey((await op(`/accounts/${acct.id}/usage_summary?by=key&${range()}`)).data)).toEqual(COUNT);
  });

  it('keygate usage --json, and its table with the error rate', async () => {
    const since = startedAt.toISOString();
    const json = async (args: string[]) => {
      const run = await runKeygate(stack, [...args, '--since', since, '--json']);
      expect(run.code, run.stderr).toBe(0);
      return JSON.parse(run.stdout);
    };
    expect(byKey(await json(['usage', '--account', acct.id, '--by', 'key']))).toEqual(COUNT);
    expect(
      counts((await json(['usage', '--by', 'account'])).find((r: any) => r.account_id === acct.id)),
    ).toEqual(TOTAL);
    const table = await runKeygate(stack, ['usage', '--account', acct.id, '--by', 'key', '--since', since]);
    expect(table.stdout).toMatch(/ERROR_RATE/);
    expect(table.stdout).toMatch(/main\s+20\s+20\s+0\s+15\s+75\.0%/);
    expect(table.stdout).toMatch(/limited\s+2\s+2\s+0\s+1\s+50\.0%/);
  });
});
