import { expect } from 'vitest';
import type { Stack } from './harness';
import { drive, type Answer } from './load';

export interface FaultLoad {
  /** Sent with every call: the emulator's scenario and its parameters. */
  headers?: Record<string, string>;
  stream?: boolean;
  hangUp?: boolean;
  durationMs?: number;
  /** Runs while the load goes on; the load stops `tailMs` after it resolves. */
  during?: () => Promise<void>;
  tailMs?: number;
}

export interface FaultRun {
  keyId: string;
  answers: Answer[];
  /** The key's call rows, by id, once every answered call is in the log (or the wait is over). */
  rows: Map<string, Record<string, any>>;
  /** How many rows each call id has (more than one is a double count). */
  counts: Map<string, number>;
}

const CONCURRENCY = 8;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Calls from 8 clients with a key of their own, under the fault the headers (or `during`) make;
 * then the key's calls as the call log has them, waiting up to `settleMs` for the writer.
 */
export async function runFault(stack: Stack, fault: FaultLoad, settleMs = 10_000): Promise<FaultRun> {
  const key = await stack.newKey({ app: 'faults' });
  let stop = false;
  const opts = {
    concurrency: CONCURRENCY,
    headers: fault.headers ?? {},
    stream: fault.stream ?? false,
    hangUp: fault.hangUp ?? false,
  };
  const answers = fault.during
    ? await Promise.all([
        drive(stack.gateway.url, key.secret, { ...opts, stop: () => stop }),
        fault
          .during()
          .then(() => sleep(fault.tailMs ?? 500))
          .finally(() => (stop = true)),
      ]).then(([a]) => a)
    : await drive(stack.gateway.url, key.secret, { ...opts, durationMs: fault.durationMs ?? 2_000 });
  const ids = answers.flatMap((a) => (a.requestId ? [a.requestId] : []));
  const sql = stack.gateway.store.db.sql;
  const deadline = Date.now() + settleMs;
  for (;;) {
    await stack.gateway.writer.flush();
    const rows = await sql<Record<string, any>[]>`select * from calls where key_id = ${key.id}`;
    const counts = new Map<string, number>();
    for (const r of rows) counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
    if (ids.every((id) => counts.has(id)) || Date.now() > deadline) {
      return { keyId: key.id, answers, rows: new Map(rows.map((r) => [r.id as string, r])), counts };
    }
    await sleep(100);
  }
}

/**
 * Nothing lost, nothing double-counted: every call a client had an answer for is in the call
 * log once, the log holds no call nobody was answered for, and the hourly rollups count the
 * key's calls (and its errors) exactly as the rows do.
 */
export async function expectCountedOnce(stack: Stack, run: FaultRun, minCalls: number): Promise<void> {
  const { answers, counts } = run;
  expect(
    answers.filter((a) => a.status === 0).map((a) => a.error),
    'calls that got no answer at all',
  ).toEqual([]);
  expect(answers.length).toBeGreaterThanOrEqual(minCalls);
  const answered = answers.map((a) => a.requestId!);
  expect(new Set(answered).size, 'one call id per answer').toBe(answered.length);
  expect(
    answered.filter((id) => !counts.has(id)),
    'answered, not recorded',
  ).toEqual([]);
  expect(
    [...counts].filter(([, n]) => n > 1),
    'recorded twice',
  ).toEqual([]);
  expect(
    [...counts.keys()].filter((id) => !answered.includes(id)),
    'recorded, not answered',
  ).toEqual([]);
  const [rollup] = await stack.gateway.store.db.sql<{ requests: number; errors: number }[]>`
    select coalesce(sum(requests), 0)::int as requests, coalesce(sum(errors), 0)::int as errors
    from usage_hourly where key_id = ${run.keyId}`;
  const errorRows = [...run.rows.values()].filter((r) => r.status >= 400 || r.error_type !== null).length;
  expect(rollup).toEqual({ requests: run.rows.size, errors: errorRows });
}

/** An error answer in the provider's shape, whose body names the request id its header does. */
export function expectProviderError(a: Answer, status: number, type: string): void {
  expect(a.status).toBe(status);
  const body = JSON.parse(a.body);
  expect(body).toEqual({
    type: 'error',
    error: { type, message: expect.any(String) },
    request_id: expect.stringMatching(/^req_\w+$/),
  });
  expect(body.request_id).toBe(a.requestIdHeader);
}

/** The server-sent events of a body, parsed; a trailing event cut mid-way is left out. */
export function sseEvents(body: string): { event: string; data: any }[] {
  const complete = body.split('\n\n').slice(0, -1);
  return complete.map((block) => {
    const event = /^event: (.+)$/m.exec(block)?.[1] ?? '';
    const data = /^data: (.+)$/m.exec(block)?.[1];
    return { event, data: data === undefined ? null : JSON.parse(data) };
  });
}

/** p-th percentile of `values` (0 when empty). */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}
