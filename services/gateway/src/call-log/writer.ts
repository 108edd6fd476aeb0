import type { Logger } from '../lib/logger';
import type { CallRecord } from '../lib/call-record';
import { copyLine, idOfLine } from './call-copy';
import { rollupShare, sumShares, type Rollup } from './call-queries';
import { usageFigures } from '../usage/usage';
import type { Segment, Spool, SpoolEntry } from './spool';

export interface CallSink {
  /**
   * Stores the calls (their COPY lines, store/call-copy.ts) and adds `rollups` to the hourly
   * rollups, in one transaction. `statementTimeoutMs`: the database cancels it past that (0: no bound).
   */
  insertLines(
    lines: readonly string[],
    rollups: Rollup[],
    opts?: { statementTimeoutMs?: number },
  ): Promise<void>;
  /** A cheap round trip that succeeds when the database answers again. */
  ping?(): Promise<void>;
}

export interface WriterOptions {
  flushIntervalMs: number;
  batchSize?: number;
  /** Records held in memory; past it, spooled records wait on disk, and records that found no room in the spool are lost (counted). */
  maxQueued?: number;
  /** Retries while the database is down back off up to this. */
  retryCapMs?: number;
  /** While the database is down, it is probed this often; a batch is retried as soon as it answers. */
  probeMs?: number;
  /**
   * A batch insert still running after this long is cancelled by PostgreSQL and retried like
   * an outage, so a stalled database (a lock, a slow disk) cannot hold the writer, or its
   * close, indefinitely. 0: no bound.
   */
  statementTimeoutMs?: number;
  spool?: Spool | null;
  logger: Logger;
}

/** What the call log is holding back, for `/readyz` and metrics. */
export interface CallLogStatus {
  /** Records waiting for PostgreSQL in memory. */
  queued: number;
  /** Spool segments waiting on disk only (an outage longer than memory holds, or a restart). */
  segmentsOnDisk: number;
  spoolBytes: number;
  spoolSegments: number;
  /** Age of the oldest record (or spool segment) not yet committed. */
  oldestAgeMs: number | null;
  /** The spool refused the last record for want of room: new records are in memory only. */
  spoolFull: boolean;
  spoolError: string | null;
  databaseUp: boolean;
  written: number;
  rejected: number;
  /** Records lost: no room in the spool and none in memory. */
  dropped: number;
  /** Failed database writes (each outage is logged once). */
  databaseErrors: number;
}

/** What a committed entry's slot holds until the queue is compacted. */
const EMPTY: SpoolEntry = { line: '', share: null as never, at: 0, seg: null, done: true, inMemory: false };

/**
 * What the writer keeps of a call until it is committed: its COPY line, made once (the spool
 * keeps it and the insert sends it), and its share of the hourly rollups. Not the record: a
 * record, its parsed usage and its line waiting a batch long (about 100 ms at saturation)
 * outlived young-generation collections, and the collector's work for them cost more of the
 * gateway's throughput than the call log's own frames (bench/RESULTS.md, fourth round).
 */
function entryOf(record: CallRecord, seg: Segment | null, inMemory: boolean): SpoolEntry {
  // The usage figures once, for the line and the share.
  const u = usageFigures(record.usage, record.batch);
  return {
    line: copyLine(record, u),
    share: rollupShare(record, u),
    at: record.createdAt.getTime(),
    seg,
    done: false,
    inMemory,
  };
}

/**
 * The call log: each finished call is appended to the spool (durable within the spool's sync
 * interval), then inserted into PostgreSQL in batches off the request path; a spool segment is
 * deleted once PostgreSQL has committed all of it. A database outage loses nothing while the
 * spool has room: past `maxQueued` records in memory, the rest wait on disk and are read back.
 */
export class CallLogWriter {
  readonly #sink: CallSink;
  readonly #opts: Required<Omit<WriterOptions, 'spool'>>;
  readonly #spool: Spool | null;
  #queue: SpoolEntry[] = [];
  #head = 0;
  #onDisk: Segment[] = [];
  #timer: NodeJS.Timeout | null = null;
  #probe: NodeJS.Timeout | null = null;
  #flushing: Promise<void> | null = null;
  /** `flush()` asked for everything waiting, not only whole batches. */
  #all = false;
  #failures = 0;
  #outageStart = 0;
  #closed = false;
  #backlogSince: number | null = null;
  dropped = 0;
  written = 0;
  /** Records the database refused as data (they are logged by id, then set aside). */
  rejected = 0;
  databaseErrors = 0;

  constructor(sink: CallSink, opts: WriterOptions) {
    this.#sink = sink;
    const { spool = null, ...rest } = opts;
    this.#opts = {
      batchSize: 500,
      maxQueued: 100_000,
      retryCapMs: 2_000,
      probeMs: 250,
      statementTimeoutMs: 0,
      ...rest,
    };
    this.#spool = spool;
    if (spool) {
      spool.onUnspooled = (entries) => this.#keep(entries);
      this.#onDisk.push(...spool.recovered);
      if (spool.recovered.length) this.#schedule(0);
    }
  }

  /** Records not yet committed by PostgreSQL that the writer holds in memory, plus those known on disk. */
  get pending(): number {
    return this.#queue.length - this.#head + this.#onDisk.reduce((n, s) => n + Math.max(0, s.outstanding), 0);
  }

  /** Since when records have waited with no batch written (null: nothing waits); readiness reads it. */
  get backlogSince(): number | null {
    return this.#backlogSince;
  }

  enqueue(record: CallRecord): void {
    this.#backlogSince ??= Date.now();
    // Serialized once, here, a call at a time: the spool keeps this line and the insert sends it.
    const entry = entryOf(record, null, false);
    const seg = this.#spool?.append(entry) ? entry.seg! : null;
    if (seg?.spilled) return;
    if (seg && this.#memoryFull()) this.#spill(seg);
    else this.#keep([entry]);
    if (this.#closed) return;
    if (this.#queue.length - this.#head >= this.#opts.batchSize && !this.#flushing && this.#failures === 0)
      void this.#start();
    else this.#schedule(this.#opts.flushIntervalMs);
  }

  #memoryFull(): boolean {
    return this.#queue.length - this.#head >= this.#opts.maxQueued;
  }

  /** Holds entries in memory; one that is in no spool segment is lost when memory is full too. */
  #keep(entries: SpoolEntry[]): void {
    for (const entry of entries) {
      if (entry.inMemory || entry.done) continue;
      if (this.#memoryFull() && !this.#spillNewest()) {
        this.dropped++;
        if (this.dropped % 1000 === 1)
          this.#opts.logger.error('call log: no room in the spool or in memory; records lost', {
            dropped: this.dropped,
          });
        continue;
      }
      entry.inMemory = true;
      this.#queue.push(entry);
    }
  }

  /** Leaves a segment's records on disk only; they are read back when the writer reaches them. */
  #spill(seg: Segment): void {
    seg.spilled = true;
    this.#onDisk.push(seg);
    this.#onDisk.sort((a, b) => a.seq - b.seq);
    const kept: SpoolEntry[] = [];
    for (let i = this.#head; i < this.#queue.length; i++) {
      const e = this.#queue[i]!;
      if (e.seg === seg) e.inMemory = false;
      else kept.push(e);
    }
    this.#queue = kept;
    this.#head = 0;
  }

  #spillNewest(): boolean {
    for (let i = this.#queue.length - 1; i >= this.#head; i--) {
      const seg = this.#queue[i]!.seg;
      if (seg && !seg.spilled) {
        this.#spill(seg);
        return true;
      }
    }
    return false;
  }

  #schedule(delay: number): void {
    if (this.#timer || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#start();
    }, delay);
    this.#timer.unref();
  }

  /** Makes the spool's buffered lines durable now, then writes everything waiting (bench/guard.ts counts this work per call). */
  async settle(): Promise<void> {
    await this.#spool?.flush();
    await this.flush();
  }

  /** Writes everything waiting now; resolves when done or when a batch fails (it is retried later). */
  async flush(): Promise<void> {
    for (let round = 0; round < 2; round++) {
      // A timed write in progress, which would leave a part batch for later, now writes it too;
      // one that had already decided to stop when this was called leaves it to the second round.
      this.#all = true;
      await this.#start();
      if (this.#failures > 0 || this.#queue.length === this.#head) return;
    }
  }

  #start(): Promise<void> {
    this.#flushing ??= this.#drain().finally(() => {
      this.#flushing = null;
      this.#all = false;
      // A part batch left for the next interval, or a database that failed and is retried.
      if (this.#queue.length > this.#head) this.#schedule(this.#opts.flushIntervalMs);
    });
    return this.#flushing;
  }

  /**
   * Writes batches in order. A timed write (not `flush()`) writes the batch waiting, then more only
   * while whole batches wait or the spool holds a backlog: records arriving while a batch is in
   * the database wait for the next interval instead of going as a string of small batches (one
   * transaction per dozen calls at a low steady rate, each paying PostgreSQL's per-statement work).
   */
  async #drain(): Promise<void> {
    for (let first = true; ; first = false) {
      const waiting = this.#queue.length - this.#head;
      if (!this.#all && !first && waiting < this.#opts.batchSize && this.#onDisk.length === 0) return;
      if (waiting === 0 && !(await this.#readBack())) return;
      const batch = this.#queue.slice(this.#head, this.#head + this.#opts.batchSize);
      if (batch.length === 0) continue;
      const rejectedBefore = this.rejected;
      try {
        await this.#write(batch);
      } catch (err) {
        this.#failed(err);
        return;
      }
      this.#committed(batch);
      this.written += batch.length - (this.rejected - rejectedBefore);
      this.#backlogSince = this.pending > 0 ? Date.now() : null;
    }
  }

  async #readBack(): Promise<boolean> {
    const seg = this.#onDisk[0];
    if (!seg || !this.#spool) return false;
    const records = await this.#spool.read(seg);
    this.#onDisk.shift();
    for (const record of records) this.#queue.push(entryOf(record, seg, true));
    return true;
  }

  #committed(batch: SpoolEntry[]): void {
    for (const e of batch) {
      e.done = true;
      e.inMemory = false;
      if (e.seg) this.#spool?.release(e.seg, 1);
    }
    // A segment spilled meanwhile took its entries out of the queue: skip what is done. The slot
    // is emptied: an entry left behind the head kept its record and line alive until the array
    // was compacted, thousands of calls later, so every record lived long enough to be promoted
    // to the old generation (a quarter of the gateway's CPU went to the collector and its effects).
    while (this.#head < this.#queue.length && this.#queue[this.#head]!.done)
      this.#queue[this.#head++] = EMPTY;
    if (this.#head > 4096 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    if (this.#failures > 0) {
      this.#opts.logger.info('call log: database answering again; writing', {
        outageMs: Date.now() - this.#outageStart,
        failedWrites: this.#failures,
      });
      this.#failures = 0;
      if (this.#probe) clearInterval(this.#probe);
      this.#probe = null;
    }
  }

  #failed(err: unknown): void {
    this.databaseErrors++;
    if (this.#failures++ === 0) {
      this.#outageStart = Date.now();
      this.#opts.logger.warn('call log write failed; will retry', { error: err, queued: this.pending });
    }
    const delay = Math.min(
      this.#opts.retryCapMs,
      this.#opts.flushIntervalMs * 2 ** Math.min(this.#failures, 16),
    );
    this.#schedule(delay);
    if (this.#probe || !this.#sink.ping || this.#closed) return;
    let probing = false;
    this.#probe = setInterval(() => {
      if (probing) return;
      probing = true;
      this.#sink.ping!()
        .then(
          () => {
            if (this.#timer) clearTimeout(this.#timer);
            this.#timer = null;
            void this.flush();
          },
          () => {},
        )
        .finally(() => (probing = false));
    }, this.#opts.probeMs);
    this.#probe.unref();
  }

  /**
   * Writes a batch; when the database refuses its data (not an outage), halves it until the
   * records it cannot store are found, and sets only those aside, so one bad record never
   * holds back the ones behind it.
   */
  async #write(batch: SpoolEntry[]): Promise<void> {
    try {
      // A call replayed from the spool may meet itself in one batch; count it once.
      const ids = batch.map((e) => idOfLine(e.line));
      const once =
        new Set(ids).size === batch.length ? batch : [...new Map(batch.map((e, i) => [ids[i]!, e])).values()];
      await this.#sink.insertLines(
        once.map((e) => e.line),
        sumShares(once.map((e) => e.share)),
        { statementTimeoutMs: this.#opts.statementTimeoutMs },
      );
    } catch (err) {
      if (!isDataError(err)) throw err;
      if (batch.length === 1) {
        this.rejected++;
        this.#opts.logger.error('call record refused by the database; set aside', {
          id: idOfLine(batch[0]!.line),
          error: err,
        });
        return;
      }
      const half = Math.ceil(batch.length / 2);
      await this.#write(batch.slice(0, half));
      await this.#write(batch.slice(half));
    }
  }

  status(): CallLogStatus {
    const spool = this.#spool?.status();
    const oldestRecord = this.#queue[this.#head]?.at;
    const oldest = Math.min(oldestRecord ?? Infinity, spool?.oldestSegmentAt ?? Infinity);
    return {
      queued: this.#queue.length - this.#head,
      segmentsOnDisk: this.#onDisk.length,
      spoolBytes: spool?.bytes ?? 0,
      spoolSegments: spool?.segments ?? 0,
      oldestAgeMs: Number.isFinite(oldest) ? Math.max(0, Date.now() - oldest) : null,
      spoolFull: spool?.full ?? false,
      spoolError: spool?.error ?? null,
      databaseUp: this.#failures === 0,
      written: this.written,
      rejected: this.rejected,
      dropped: this.dropped,
      databaseErrors: this.databaseErrors,
    };
  }

  /** Tries to write what is left for at most `timeoutMs`; what is still spooled then is replayed on the next start. */
  async close(timeoutMs = 5_000): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#probe) clearInterval(this.#probe);
    this.#timer = this.#probe = null;
    const deadline = Date.now() + timeoutMs;
    while (this.pending > 0 && Date.now() < deadline) {
      await this.flush();
      if (this.pending > 0) await new Promise((r) => setTimeout(r, 100));
    }
    await this.#spool?.close();
    const unspooled = this.#queue.slice(this.#head).filter((e) => !e.seg).length;
    if (unspooled > 0)
      this.#opts.logger.error('call records lost at shutdown: not in the spool and not written', {
        count: unspooled,
      });
    else if (this.pending > 0)
      this.#opts.logger.warn('call records left in the spool; written on the next start', {
        count: this.pending,
      });
  }
}

// SQLSTATE classes that mean "this data can never be stored": 22 data exception,
// 23 integrity constraint violation, 54 program limit exceeded (e.g. an index row too large).
function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^(22|23|54)/.test(code);
}
