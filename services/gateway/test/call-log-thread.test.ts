import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { CallLogThread, type Spawn, type ThreadData } from '../src/call-log/thread';
import { CallLogWriter } from '../src/call-log/writer';
import type { CallRecord } from '../src/lib/call-record';
import { randomBase62 } from '../src/lib/ids';
import { createLogger } from '../src/lib/logger';
import { callAt, startStack, useTestStore } from './harness';
import { waitFor } from './kit/wait';

const db = useTestStore();
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function account(): Promise<string> {
  const id = `acct_${randomBase62(12)}`;
  await db.store.db.sql`insert into accounts (id, name, plan_id) values (${id}, 'Thread test', 'team')`;
  return id;
}

function records(acct: string, n: number, from = 0): CallRecord[] {
  return Array.from({ length: n }, (_, i) =>
    callAt(acct, `2026-11-28T0${(from + i) % 2}:10:00.000Z`, {
      usage: { input_tokens: 100 + from + i, output_tokens: 10 },
    }),
  );
}

function threadData(): ThreadData {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-thread-'));
  dirs.push(dir);
  const { url, schema } = db.store.db;
  return {
    url,
    ...(schema ? { schema } : {}),
    spool: { dir: join(dir, 'spool'), maxBytes: 64 * 1024 * 1024, syncMs: 20 },
    writer: { flushIntervalMs: 10, statementTimeoutMs: 0 },
  };
}

const stored = (acct: string) =>
  db.store.db.sql<{ id: string; input_tokens: number }[]>`
    select id, input_tokens from calls where account_id = ${acct} order by input_tokens`;

const rollup = (acct: string) =>
  db.store.db.sql<{ requests: number; input: number }[]>`
    select sum(requests)::int as requests, sum(input_tokens)::int as input
    from usage_hourly where account_id = ${acct}`.then((rows) => rows[0]!);

/** A thread on a fresh spool, and the lines it logs. */
async function started(
  opts: { spawn?: Spawn; handOverMs?: number } = {},
): Promise<{ log: CallLogThread; lines: string[] }> {
  const lines: string[] = [];
  const log = await CallLogThread.start(
    threadData(),
    createLogger('debug', (l) => lines.push(l)),
    opts.spawn,
    opts.handOverMs,
  );
  return { log, lines };
}

describe("the call log's thread", () => {
  it('stores what it is handed, with the hourly rollups, by the time flush answers; status follows', async () => {
    const acct = await account();
    const { log, lines } = await started();
    try {
      const batch = records(acct, 50);
      for (const r of batch) log.enqueue(r);
      // Handed over, not yet taken or written: counted as pending all the same.
      expect(log.pending).toBe(50);
      expect(log.backlogSince).not.toBeNull();
      await log.flush();
      expect((await stored(acct)).map((r) => r.id)).toEqual(batch.map((r) => r.id));
      const input = batch.reduce((n, r) => n + (r.usage?.input_tokens ?? 0), 0);
      expect(await rollup(acct)).toEqual({ requests: 50, input });
      expect(log.status()).toMatchObject({
        written: 50,
        queued: 0,
        dropped: 0,
        databaseUp: true,
        spoolFull: false,
      });
      expect(log.pending).toBe(0);
      expect(log.backlogSince).toBeNull();
    } finally {
      await log.close();
    }
    expect(lines.filter((l) => l.includes('"level":"error"'))).toEqual([]);
  });

  it('hands calls over in batches: 64 at once, fewer when the wait ends or a flush asks, one message each', async () => {
    const acct = await account();
    // The records of each message the main side posts to the thread.
    const posted: number[] = [];
    const spawn: Spawn = (file, data) => {
      const w = new Worker(file, { workerData: data });
      const post = w.postMessage.bind(w);
      w.postMessage = (m: { t: string; records?: unknown[] }) => {
        if (m.t === 'calls') posted.push(m.records!.length);
        post(m);
      };
      return w;
    };
    const { log } = await started({ spawn, handOverMs: 60_000 });
    try {
      const batch = records(acct, 70);
      for (const r of batch.slice(0, 63)) log.enqueue(r);
      // A minute-long wait: nothing goes until the 64th call.
      expect(posted).toEqual([]);
      log.enqueue(batch[63]!);
      expect(posted).toEqual([64]);
      for (const r of batch.slice(64)) log.enqueue(r);
      expect(log.pending).toBe(70);
      await log.flush();
      expect(posted).toEqual([64, 6]);
      expect((await stored(acct)).map((r) => r.id)).toEqual(batch.map((r) => r.id));
    } finally {
      await log.close();
    }
    // A short wait: calls that end within it go in one message, without a flush.
    posted.length = 0;
    const { log: quick } = await started({ spawn, handOverMs: 20 });
    try {
      const more = records(acct, 5, 70);
      for (const r of more) quick.enqueue(r);
      expect(posted).toEqual([]);
      await waitFor(() => posted.length > 0, { timeout: 5_000, interval: 5, what: 'the hand-over' });
      expect(posted).toEqual([5]);
      await waitFor(async () => (await stored(acct)).length === 75, {
        timeout: 10_000,
        what: 'the 5 calls stored',
      });
    } finally {
      await quick.close();
    }
  });

  it('reports as its backlog the oldest call not yet written, not the first since it was last empty', async () => {
    const acct = await account();
    const { log } = await started({ handOverMs: 60_000 });
    try {
      const calls = records(acct, 129);
      // 64 go at once; the 65th waits for the next batch, as calls always wait under steady load.
      for (const r of calls.slice(0, 65)) log.enqueue(r);
      const first = Date.now();
      await waitFor(() => log.status().written >= 64, { timeout: 10_000, what: 'the first 64 written' });
      await waitFor(() => Date.now() > first + 20, {
        timeout: 1_000,
        interval: 5,
        what: 'the clock to move',
      });
      // The waiting call goes with 63 more; one call waits again, newer than the first batch.
      for (const r of calls.slice(65, 128)) log.enqueue(r);
      const second = Date.now();
      log.enqueue(calls[128]!);
      await waitFor(() => log.status().written >= 128, { timeout: 10_000, what: '128 written' });
      expect(log.pending).toBe(1);
      expect(log.backlogSince).not.toBeNull();
      expect(log.backlogSince!).toBeGreaterThanOrEqual(second);
      await log.flush();
      expect(log.backlogSince).toBeNull();
    } finally {
      await log.close();
    }
  });

  it('a record that cannot be handed over is counted and logged; the others in its batch land', async () => {
    const acct = await account();
    const { log, lines } = await started();
    try {
      const [a, b, c] = records(acct, 3);
      // A value structured clone refuses (a function), as a bug where records are made could leave.
      const broken = { ...b!, usage: { ...b!.usage, note: () => 'not data' } } as unknown as CallRecord;
      for (const r of [a!, broken, c!]) log.enqueue(r);
      await log.flush();
      expect((await stored(acct)).map((r) => r.id).sort()).toEqual([a!.id, c!.id].sort());
      expect(log.dropped).toBe(1);
      expect(log.status().dropped).toBe(1);
      expect(
        lines.filter((l) => l.includes('could not be handed to its thread') && l.includes(b!.id)),
      ).toHaveLength(1);
    } finally {
      await log.close();
    }
  });

  it('a thread that cannot open its spool fails the start, with the reason', async () => {
    const data = threadData();
    // The spool's directory would have to be made inside a regular file.
    const file = join(data.spool!.dir, '..', 'not-a-dir');
    writeFileSync(file, 'x');
    await expect(
      CallLogThread.start(
        { ...data, spool: { ...data.spool!, dir: join(file, 'spool') } },
        createLogger('error', () => {}),
      ),
    ).rejects.toThrow(/ENOTDIR/);
  });

  it('a restart that fails is tried again, later; records wait for the thread and then land', async () => {
    const acct = await account();
    const lines: string[] = [];
    const workers: Worker[] = [];
    const spawn: Spawn = (file, data) => {
      // The second start fails before the thread is ready, as a broken start would.
      const w =
        workers.length === 1
          ? new Worker('throw new Error("broken start")', { eval: true })
          : new Worker(file, { workerData: data });
      workers.push(w);
      return w;
    };
    const log = await CallLogThread.start(
      threadData(),
      createLogger('debug', (l) => lines.push(l)),
      spawn,
    );
    try {
      await workers[0]!.terminate();
      const batch = records(acct, 4);
      for (const r of batch) log.enqueue(r);
      // flush waits for a running thread: the third start.
      await log.flush();
      expect(workers).toHaveLength(3);
      expect((await stored(acct)).map((r) => r.id).sort()).toEqual(batch.map((r) => r.id).sort());
      expect(lines.filter((l) => l.includes('its thread stopped'))).toHaveLength(2);
      expect(lines.some((l) => l.includes('broken start'))).toBe(true);
      expect(lines.filter((l) => l.includes('its thread is running again'))).toHaveLength(1);
      expect(log.dropped).toBe(0);
    } finally {
      await log.close();
    }
  });

  it('a thread that stops is started again on the same spool: what it had spooled is written once, and later records too', async () => {
    const acct = await account();
    const lines: string[] = [];
    const workers: Worker[] = [];
    const spawn: Spawn = (file, data) => {
      const w = new Worker(file, { workerData: data });
      workers.push(w);
      return w;
    };
    const data = threadData();
    const log = await CallLogThread.start(
      data,
      createLogger('debug', (l) => lines.push(l)),
      spawn,
    );
    const sql = db.store.db.sql;
    try {
      // The database refuses (as in an outage): the records wait in the spool, made durable by settle.
      await sql`alter table usage_hourly rename to usage_hourly_offline`;
      const first = records(acct, 20);
      for (const r of first) log.enqueue(r);
      await log.settle();
      expect(readdirSync(data.spool!.dir).some((f) => f.endsWith('.tsv'))).toBe(true);
      expect(log.status().databaseUp).toBe(false);
      // The thread stops as a crash would, then the database is back.
      await workers[0]!.terminate();
      await sql`alter table usage_hourly_offline rename to usage_hourly`;
      await waitFor(() => lines.some((l) => l.includes('its thread is running again')), {
        timeout: 10_000,
        what: 'the thread started again',
      });
      expect(workers).toHaveLength(2);
      const later = records(acct, 5, 20);
      for (const r of later) log.enqueue(r);
      await waitFor(async () => (await stored(acct)).length === 25 && log.pending === 0, {
        timeout: 10_000,
        what: 'all 25 records stored',
      });
      await log.flush();
      expect((await stored(acct)).map((r) => r.id).sort()).toEqual(
        [...first, ...later].map((r) => r.id).sort(),
      );
      expect((await rollup(acct)).requests).toBe(25);
      expect(log.dropped).toBe(0);
      expect(lines.filter((l) => l.includes('its thread stopped'))).toHaveLength(1);
    } finally {
      await sql`alter table if exists usage_hourly_offline rename to usage_hourly`;
      await log.close();
    }
  });
});

describe('KEYGATE_CALL_LOG_THREAD', () => {
  it('on by default; off writes the call log from the gateway thread, to the same effect', async () => {
    for (const [env, kind] of [
      [{}, CallLogThread],
      [{ KEYGATE_CALL_LOG_THREAD: 'off' }, CallLogWriter],
    ] as const) {
      const stack = await startStack(env);
      try {
        expect(stack.gateway.writer).toBeInstanceOf(kind);
        const res = await fetch(`${stack.gateway.url}/v1/messages`, {
          method: 'POST',
          headers: { authorization: `Bearer ${stack.appKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'claude-sonnet-4-5',
            max_tokens: 8,
            messages: [{ role: 'user', content: 'hi' }],
          }),
        });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        await stack.gateway.writer.flush();
        expect((await stack.calls()).map((c) => c.id)).toEqual([res.headers.get('keygate-request-id')]);
      } finally {
        await stack.close();
      }
    }
  });
});
