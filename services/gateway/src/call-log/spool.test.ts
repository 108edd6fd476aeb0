import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { callAt } from '../../test/kit/call-records';
import { waitFor } from '../../test/kit/wait';
import { createLogger, silentLogger } from '../lib/logger';
import type { CallRecord } from '../lib/call-record';
import { crc32 } from 'node:zlib';
import { copyLine, recordOfCopyLine } from './call-copy';
import { SPOOL_LINE_EXTRA, spoolLine } from './segment';
import { Spool } from './spool';
import { CallLogWriter } from './writer';

const record = (i: number): CallRecord =>
  callAt('acct_1', new Date(1_700_000_000_000 + i).toISOString(), {
    id: `req_${i}`,
    keyId: 'key_1',
    usage: { input_tokens: i, output_tokens: 1 },
  });
/** A spool line as this version writes it. */
const encodeLine = (r: CallRecord) => spoolLine(copyLine(r));
/** A spool line as the versions before COPY wrote it: the record's JSON. */
const jsonLine = (r: CallRecord) => {
  const json = JSON.stringify(r);
  return `${crc32(json).toString(16).padStart(8, '0')} ${json}\n`;
};

class Sink {
  ids: string[] = [];
  records: CallRecord[] = [];
  down = false;
  async insertLines(lines: readonly string[]) {
    const records = lines.map((l) => recordOfCopyLine(l)!);
    if (this.down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    this.ids.push(...records.map((r) => r.id));
    this.records.push(...records);
  }
  async ping() {
    if (this.down) throw new Error('down');
  }
}

const until = (cond: () => boolean, timeout = 5000) => waitFor(cond, { timeout, interval: 5 });

let dir: string;
const segments = () => readdirSync(dir).filter((f) => /\.(tsv|jsonl)$/.test(f));
const spoolOpts = (extra = {}) => ({ dir, maxBytes: 1 << 20, syncMs: 5, logger: silentLogger, ...extra });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keygate-spool-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('Spool', () => {
  it('counts a line as the bytes it writes: its COPY line and SPOOL_LINE_EXTRA around it', () => {
    for (const r of [record(1), { ...record(2), app: 'é中😀\t' }])
      expect(Buffer.byteLength(encodeLine(r))).toBe(Buffer.byteLength(copyLine(r)) + SPOOL_LINE_EXTRA);
  });

  it('writes a line to its file on the next turn, long before the group commit: a killed process keeps it', async () => {
    // The page cache outlives a kill -9; only a power cut needs the fdatasync, a minute away here.
    const spool = await Spool.open(spoolOpts({ syncMs: 60_000 }));
    const entries = [0, 1].map((i) => ({
      line: copyLine(record(i)),
      share: null as never,
      at: 0,
      seg: null,
      done: false,
      inMemory: true,
    }));
    for (const e of entries) expect(spool.append(e)).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    await until(
      () => segments().length === 1 && readFileSync(join(dir, segments()[0]!), 'utf8').length > 0,
      1000,
    );
    expect(readFileSync(join(dir, segments()[0]!), 'utf8')).toBe(
      [0, 1].map((i) => encodeLine(record(i))).join(''),
    );
    // Done with before its group commit: still closed and deleted only after it.
    spool.release(entries[0]!.seg!, 2);
    spool.seal(entries[0]!.seg!);
    expect(segments()).toHaveLength(1);
    await spool.flush();
    expect(segments()).toHaveLength(0);
    await spool.close();
  });

  it('puts each record on disk within the sync interval, before PostgreSQL takes it', async () => {
    const sink = new Sink();
    sink.down = true;
    const w = new CallLogWriter(sink, {
      flushIntervalMs: 60_000,
      spool: await Spool.open(spoolOpts()),
      logger: silentLogger,
    });
    for (let i = 0; i < 3; i++) w.enqueue(record(i));
    await until(
      () =>
        segments().length === 1 && readFileSync(join(dir, segments()[0]!), 'utf8').split('\n').length === 4,
      1000,
    );
    const text = readFileSync(join(dir, segments()[0]!), 'utf8');
    expect(text).toBe([0, 1, 2].map((i) => encodeLine(record(i))).join(''));
    expect(w.status()).toMatchObject({ queued: 3, spoolSegments: 1, databaseUp: true });
    await w.close(0);
  });

  it('deletes a segment once PostgreSQL has committed every record in it', async () => {
    const sink = new Sink();
    sink.down = true;
    const w = new CallLogWriter(sink, {
      flushIntervalMs: 5,
      probeMs: 10,
      retryCapMs: 50,
      spool: await Spool.open(spoolOpts()),
      logger: silentLogger,
    });
    for (let i = 0; i < 50; i++) w.enqueue(record(i));
    await until(
      () =>
        segments().length === 1 && readFileSync(join(dir, segments()[0]!), 'utf8').split('\n').length === 51,
    );
    sink.down = false;
    await until(() => sink.ids.length === 50 && w.status().spoolBytes === 0 && segments().length === 0);
    expect(w.status()).toMatchObject({ queued: 0, spoolBytes: 0, spoolSegments: 0 });
    await w.close();
  });

  it('replays what an earlier run left, each call once, skipping a torn last line, from this version and the one before', async () => {
    // The version before COPY wrote JSON lines in .jsonl segments.
    writeFileSync(
      join(dir, 'calls-000000000007.jsonl'),
      jsonLine(record(1)) + jsonLine(record(2)) + jsonLine(record(1)),
    );
    appendFileSync(join(dir, 'calls-000000000007.jsonl'), jsonLine(record(3)).slice(0, 40));
    writeFileSync(join(dir, 'calls-000000000008.tsv'), `${encodeLine(record(4))}deadbeef req_9\tacct_1\n`);
    const logs: string[] = [];
    const spool = await Spool.open(spoolOpts({ logger: createLogger('warn', (l) => logs.push(l)) }));
    expect(spool.recovered.map((s) => s.seq)).toEqual([7, 8]);
    const sink = new Sink();
    const w = new CallLogWriter(sink, { flushIntervalMs: 5, spool, logger: silentLogger });
    await until(() => sink.ids.length === 3 && segments().length === 0);
    expect(sink.ids).toEqual(['req_1', 'req_2', 'req_4']);
    // Every field as it was spooled, from either format.
    expect(sink.records[0]).toMatchObject(record(1));
    expect(sink.records[2]).toMatchObject(record(4));
    expect(spool.skippedLines).toBe(2);
    expect(logs.filter((l) => l.includes('torn or damaged'))).toHaveLength(2);
    // New segments continue the numbering, never overwrite an old one.
    sink.down = true;
    w.enqueue(record(5));
    await until(() => segments().length === 1);
    expect(segments()).toEqual(['calls-000000000009.tsv']);
    await w.close(0);
  });

  it('an outage longer than memory holds: records wait on disk, and all arrive once it is over', async () => {
    const sink = new Sink();
    sink.down = true;
    const spool = await Spool.open(spoolOpts({ segmentBytes: 1024 }));
    const w = new CallLogWriter(sink, {
      flushIntervalMs: 5,
      maxQueued: 20,
      probeMs: 10,
      retryCapMs: 50,
      spool,
      logger: silentLogger,
    });
    for (let i = 0; i < 300; i++) w.enqueue(record(i));
    await spool.flush();
    expect(w.status().queued).toBeLessThanOrEqual(20);
    expect(w.status().segmentsOnDisk).toBeGreaterThan(5);
    expect(w.dropped).toBe(0);
    sink.down = false;
    await until(() => sink.ids.length >= 300 && segments().length === 0);
    expect(new Set(sink.ids).size).toBe(300);
    expect(w.status()).toMatchObject({ queued: 0, segmentsOnDisk: 0, spoolBytes: 0, databaseUp: true });
    await w.close();
  });

  it('a clean stop with the database down keeps everything for the next start', async () => {
    const sink = new Sink();
    sink.down = true;
    const first = new CallLogWriter(sink, {
      flushIntervalMs: 5,
      spool: await Spool.open(spoolOpts()),
      logger: silentLogger,
    });
    for (let i = 0; i < 10; i++) first.enqueue(record(i));
    await first.close(50);
    expect(sink.ids).toEqual([]);
    const up = new Sink();
    const second = new CallLogWriter(up, {
      flushIntervalMs: 5,
      spool: await Spool.open(spoolOpts()),
      logger: silentLogger,
    });
    await until(() => up.ids.length === 10 && segments().length === 0);
    expect(up.ids.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `req_${i}`).sort());
    await second.close();
  });

  it('full: says so, keeps the records in memory for PostgreSQL, and spools again once there is room', async () => {
    const logs: string[] = [];
    const logger = createLogger('warn', (l) => logs.push(l));
    const sink = new Sink();
    sink.down = true;
    const lineBytes = Buffer.byteLength(encodeLine(record(10)));
    const spool = await Spool.open(spoolOpts({ maxBytes: lineBytes * 3, logger }));
    const w = new CallLogWriter(sink, { flushIntervalMs: 5, probeMs: 10, retryCapMs: 50, spool, logger });
    for (let i = 10; i < 15; i++) w.enqueue(record(i));
    expect(w.status()).toMatchObject({ spoolFull: true, queued: 5 });
    expect(spool.unspooled).toBe(2);
    expect(logs.filter((l) => l.includes('call spool full'))).toHaveLength(1);
    sink.down = false;
    await until(() => sink.ids.length === 5 && segments().length === 0);
    await until(() => spool.status().bytes === 0);
    w.enqueue(record(20));
    expect(w.status().spoolFull).toBe(false);
    expect(logs.some((l) => l.includes('room again'))).toBe(true);
    await until(() => sink.ids.length === 6);
    await w.close();
  });

  it('a failing disk: the records it refused still reach PostgreSQL from memory', async () => {
    const logs: string[] = [];
    const logger = createLogger('warn', (l) => logs.push(l));
    const sink = new Sink();
    const spool = await Spool.open(spoolOpts({ logger }));
    const w = new CallLogWriter(sink, { flushIntervalMs: 5, spool, logger });
    rmSync(dir, { recursive: true });
    for (let i = 0; i < 4; i++) w.enqueue(record(i));
    await until(() => sink.ids.length === 4 && logs.some((l) => l.includes('call spool write failed')));
    expect(w.status().spoolError).toBe('ENOENT');
    expect(spool.unspooled).toBeGreaterThanOrEqual(4);
    expect(w.dropped).toBe(0);
    await w.close();
  });

  it('refuses a second live process on the same spool', async () => {
    writeFileSync(join(dir, 'lock'), String(process.ppid));
    await expect(Spool.open(spoolOpts())).rejects.toThrow(/in use by process/);
    writeFileSync(join(dir, 'lock'), '999999999');
    const spool = await Spool.open(spoolOpts());
    expect(readFileSync(join(dir, 'lock'), 'utf8')).toBe(String(process.pid));
    await spool.close();
  });
});

describe('CallLogWriter while the database is down', () => {
  it('retries as soon as the health probe sees the database again, not after a long backoff', async () => {
    const sink = new Sink();
    sink.down = true;
    const w = new CallLogWriter(sink, {
      flushIntervalMs: 5,
      retryCapMs: 60_000,
      probeMs: 20,
      logger: silentLogger,
    });
    w.enqueue(record(1));
    // Backed off five times (5, 10, 20, 40, 80 ms): a retry alone would now wait long.
    await until(() => w.databaseErrors >= 5);
    const upAt = Date.now();
    sink.down = false;
    await until(() => sink.ids.length === 1, 2000);
    expect(Date.now() - upAt).toBeLessThan(1000);
    expect(w.status().databaseUp).toBe(true);
    await w.close();
  });

  it('backs off to the cap, never beyond it', async () => {
    const sink = new Sink();
    sink.down = true;
    let attempts = 0;
    sink.insertLines = async () => {
      attempts++;
      throw new Error('down');
    };
    const w = new CallLogWriter(sink, { flushIntervalMs: 5, retryCapMs: 40, logger: silentLogger });
    w.enqueue(record(1));
    // 5, 10, 20, 40, 40, … ms: a 30 s cap would have stopped after four or five attempts.
    await waitFor(() => attempts > 8, { timeout: 600, what: 'more than 8 attempts in 600 ms' });
    await w.close(0);
  });
});
