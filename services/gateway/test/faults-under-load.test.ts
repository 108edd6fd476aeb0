import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCountedOnce, expectProviderError, percentile, runFault, sseEvents } from './fault-load';
import { startStack, type Stack } from './harness';

// Faults at a gateway under load from 8 clients, each on a key of its own; for each, what the
// clients were answered against what the call log holds (fault-load.ts says how it counts).
const UPSTREAM_TIMEOUT_MS = 1_000;
const STATEMENT_TIMEOUT_MS = 400;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    KEYGATE_UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
    KEYGATE_CALL_LOG_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
  });
});
afterAll(() => stack?.close());

describe('upstream faults under load: every answer provider-shaped, every call recorded once', () => {
  it.each([
    ['500 api_error', 'api_error', 500],
    ['529 overloaded_error', 'overloaded', 529],
  ] as const)('upstream %s: passed through and recorded with its status', async (_name, scenario, status) => {
    const run = await runFault(stack, { headers: { 'x-emulator-scenario': scenario } });
    await expectCountedOnce(stack, run, 16);
    const type = status === 529 ? 'overloaded_error' : 'api_error';
    for (const a of run.answers) expectProviderError(a, status, type);
    for (const row of run.rows.values())
      expect(row).toMatchObject({ status, error_type: type, partial: false });
  });

  it(`upstream silent past the timeout (${UPSTREAM_TIMEOUT_MS} ms): 504 timeout_error from the gateway, recorded`, async () => {
    const run = await runFault(stack, {
      headers: { 'x-emulator-scenario': 'slow_first_byte', 'x-emulator-delay-ms': '5000' },
    });
    await expectCountedOnce(stack, run, 8);
    for (const a of run.answers) {
      expectProviderError(a, 504, 'timeout_error');
      // The gateway's own answer: its request id is the call's.
      expect(a.requestIdHeader).toBe(a.requestId);
      expect(a.at - a.sentAt).toBeGreaterThanOrEqual(UPSTREAM_TIMEOUT_MS - 50);
    }
    for (const row of run.rows.values())
      expect(row).toMatchObject({ status: 504, error_type: 'timeout_error' });
  });

  it('slow first bytes (300 ms) of a stream: complete answers, recorded with their time to first byte', async () => {
    const run = await runFault(stack, {
      stream: true,
      headers: { 'x-emulator-scenario': 'slow_first_byte', 'x-emulator-delay-ms': '300' },
    });
    await expectCountedOnce(stack, run, 16);
    for (const a of run.answers) {
      expect(a).toMatchObject({ status: 200, error: null });
      expect(sseEvents(a.body).at(-1)?.event).toBe('message_stop');
    }
    for (const row of run.rows.values()) {
      expect(row).toMatchObject({ status: 200, error_type: null, partial: false, estimated: false });
      expect(row.ttfb_ms).toBeGreaterThanOrEqual(290);
      expect(row.output_tokens).toBeGreaterThan(0);
    }
  });

  it('a stream the upstream cuts after 4 events: the client keeps what came, recorded once as partial', async () => {
    const run = await runFault(stack, {
      stream: true,
      headers: { 'x-emulator-scenario': 'stream_cut', 'x-emulator-cut-after': '4' },
    });
    await expectCountedOnce(stack, run, 16);
    for (const a of run.answers) {
      expect(a.status).toBe(200);
      expect(a.requestIdHeader).toMatch(/^req_/);
      // The connection is closed as the provider's was: the events before the cut, each whole, and no end.
      const events = sseEvents(a.body);
      expect(events[0]?.event).toBe('message_start');
      expect(events.map((e) => e.event)).not.toContain('message_stop');
      expect(a.error).toMatch(/^body broke off/);
    }
    for (const row of run.rows.values()) {
      expect(row).toMatchObject({ status: 200, error_type: 'api_error', partial: true, estimated: true });
      expect(row.input_tokens).toBeGreaterThan(0);
    }
  });

  it('clients that disconnect mid-stream: each call recorded once as partial, client_closed', async () => {
    const run = await runFault(stack, {
      stream: true,
      hangUp: true,
      headers: { 'x-emulator-scenario': 'paced', 'x-emulator-deltas': '50', 'x-emulator-interval-ms': '20' },
    });
    await expectCountedOnce(stack, run, 16);
    for (const a of run.answers) expect(a).toMatchObject({ status: 200, error: 'client_hung_up' });
    for (const row of run.rows.values()) {
      expect(row).toMatchObject({ status: 200, error_type: 'client_closed', partial: true });
      expect(row.input_tokens).toBeGreaterThan(0);
    }
  });
});

describe(`database slow (KEYGATE_CALL_LOG_STATEMENT_TIMEOUT_MS=${STATEMENT_TIMEOUT_MS})`, () => {
  it('the rollup table locked for 2.5 s: calls answered at normal latency, the writer is not held, and every record lands once after', async () => {
    const locker = postgres(stack.gateway.store.db.url, {
      max: 1,
      onnotice: () => {},
      connection: { search_path: stack.schema },
    });
    const stall = { from: 0, to: 0, flushMs: 0, pending: 0 };
    const errorsBefore = stack.gateway.writer.databaseErrors;
    try {
      const run = await runFault(stack, {
        during: async () => {
          await sleep(700);
          let release!: () => void;
          let locked!: () => void;
          const isLocked = new Promise<void>((r) => (locked = r));
          // Writes wait on EXCLUSIVE; reads (budgets, reports) still go through.
          const holder = locker.begin(async (tx) => {
            await tx`lock table usage_hourly in exclusive mode`;
            locked();
            await new Promise<void>((r) => (release = r));
          });
          await isLocked;
          stall.from = Date.now();
          await sleep(2_500);
          // Still locked: a flush gives up within the statement timeout instead of waiting for the lock.
          const t0 = Date.now();
          await Promise.race([stack.gateway.writer.flush(), sleep(10_000)]);
          stall.flushMs = Date.now() - t0;
          stall.pending = stack.gateway.writer.pending;
          stall.to = Date.now();
          release();
          await holder;
        },
        tailMs: 700,
      });
      await expectCountedOnce(stack, run, 40);
      for (const a of run.answers) expect(a).toMatchObject({ status: 200, error: null });

      expect(stall.flushMs).toBeLessThan(STATEMENT_TIMEOUT_MS + 1_000);
      expect(stall.pending).toBeGreaterThan(0);
      expect(stack.gateway.writer.databaseErrors).toBeGreaterThan(errorsBefore);
      expect(
        stack.logs.some((l) => l.includes('call log write failed') && l.includes('statement timeout')),
      ).toBe(true);

      const latency = (a: (typeof run.answers)[number]) => a.at - a.sentAt;
      const before = run.answers.filter((a) => a.at < stall.from).map(latency);
      const during = run.answers.filter((a) => a.sentAt >= stall.from && a.at <= stall.to).map(latency);
      console.info(
        `database slow: ${before.length} calls before the lock, p50 ${percentile(before, 50)} ms, p95 ${percentile(before, 95)} ms; ${during.length} during it, p50 ${percentile(during, 50)} ms, p95 ${percentile(during, 95)} ms, max ${Math.max(...during)} ms; flush while locked ${stall.flushMs} ms, ${stall.pending} records waiting`,
      );
      expect(during.length).toBeGreaterThan(20);
      // Answers that waited on the database would take the whole stall (2.5 s and more).
      expect(Math.max(...during)).toBeLessThan(1_000);
      expect(percentile(during, 50)).toBeLessThan(Math.max(100, 5 * percentile(before, 50)));
    } finally {
      await locker.end();
    }
  });
});
