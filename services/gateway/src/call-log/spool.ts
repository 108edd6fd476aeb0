import { writeSync } from 'node:fs';
import { chmod, mkdir, open, readdir, readFile, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../lib/logger';
import type { CallRecord } from '../lib/call-record';
import type { RollupShare } from './call-queries';
import { decodeSegment, SPOOL_LINE_EXTRA, spoolLine } from './segment';
import { lock, syncDir } from './spool-dir';

/** A call record on its way to PostgreSQL, and the spool segment that holds it, if any. */
export interface SpoolEntry {
  /** The record's COPY line (store/call-copy.ts): what the spool keeps and the insert sends. */
  line: string;
  /** What the call adds to its hourly rollup row. */
  share: RollupShare;
  /** When the call was made (epoch ms). */
  at: number;
  seg: Segment | null;
  /** PostgreSQL has committed it. */
  done: boolean;
  /** The writer holds it in memory (otherwise it is read back from its segment). */
  inMemory: boolean;
}

/** One append-only file of the spool. */
export class Segment {
  /** Bytes in the file plus bytes waiting for the next write. */
  bytes = 0;
  written = 0;
  /** Records appended that PostgreSQL has not committed yet. */
  outstanding = 0;
  /** Lines waiting for the next write. */
  buffered = 0;
  sealed = false;
  /** Its records are on disk only, to be read back when the writer gets to them. */
  spilled = false;
  handle: FileHandle | null = null;
  constructor(
    readonly seq: number,
    readonly path: string,
    readonly createdAt: number,
  ) {}
}

export interface SpoolOptions {
  dir: string;
  /** Bound on the spool's size on disk; past it, records are kept in memory only. */
  maxBytes: number;
  /** Group commit: buffered lines are written and fdatasync'ed once per this interval. */
  syncMs: number;
  segmentBytes?: number;
  logger: Logger;
  /** Entries whose write failed (disk full, I/O error): they are no longer in any segment. */
  onUnspooled?: (entries: SpoolEntry[]) => void;
}

export interface SpoolStatus {
  bytes: number;
  segments: number;
  full: boolean;
  /** The last write error's code while the spool is refusing records after it, else null. */
  error: string | null;
  oldestSegmentAt: number | null;
}

// Segments hold COPY lines (`.tsv`); an earlier version's hold JSON lines (`.jsonl`), read the same way.
const NAME = /^calls-(\d{12})\.(?:tsv|jsonl)$/;
const RETRY_AFTER_ERROR_MS = 1_000;

/**
 * The call log's local, append-only spool, run on the call log's thread (the request path never
 * waits for the disk). `append` buffers a line and the thread's next turn writes what is
 * buffered in one write: from then on the line is in the kernel's page cache, which a killed
 * process (kill -9, a crash, the OOM killer) does not take with it. Every `syncMs` what was
 * written is fdatasync'ed in one go (group commit), so a power cut or a kernel crash loses at
 * most the last `syncMs` plus one fdatasync. A segment is deleted once every record in it is
 * committed by PostgreSQL.
 */
export class Spool {
  readonly #opts: Required<Omit<SpoolOptions, 'onUnspooled'>> & Pick<SpoolOptions, 'onUnspooled'>;
  readonly #segments = new Map<number, Segment>();
  #active: Segment | null = null;
  #nextSeq: number;
  #bytes = 0;
  #buffer: Array<{ entry: SpoolEntry; size: number; seg: Segment }> = [];
  /** The next group commit (fdatasync of what was written since the last). */
  #timer: NodeJS.Timeout | null = null;
  #writeScheduled = false;
  /** Segments written to since their last fdatasync, and whether a new file awaits its directory's. */
  readonly #unsynced = new Set<Segment>();
  #dirUnsynced = false;
  #writing: Promise<void> | null = null;
  #settleLater = new Set<Segment>();
  #full = false;
  #error: string | null = null;
  #failedUntil = 0;
  #closed = false;
  /** Segments left by an earlier run, oldest first: the writer replays them. */
  readonly recovered: Segment[];
  /** Records that found no room in the spool (full or failing). */
  unspooled = 0;
  /** Lines skipped on reading: torn by a crash, or damaged. */
  skippedLines = 0;

  private constructor(opts: SpoolOptions, recovered: Segment[]) {
    this.#opts = {
      segmentBytes: Math.max(64 * 1024, Math.min(4 << 20, Math.floor(opts.maxBytes / 8))),
      onUnspooled: undefined,
      ...opts,
    };
    this.recovered = recovered;
    for (const seg of recovered) {
      this.#segments.set(seg.seq, seg);
      this.#bytes += seg.bytes;
    }
    this.#nextSeq = (recovered.at(-1)?.seq ?? 0) + 1;
  }

  /** Takes the directory's lock (one gateway per spool) and finds what an earlier run left. */
  static async open(opts: SpoolOptions): Promise<Spool> {
    // Call records name members, keys and groups: readable by this user only.
    await mkdir(opts.dir, { recursive: true, mode: 0o700 });
    await chmod(opts.dir, 0o700);
    await lock(join(opts.dir, 'lock'));
    const recovered: Segment[] = [];
    for (const name of (await readdir(opts.dir)).sort()) {
      const m = NAME.exec(name);
      if (!m) continue;
      const path = join(opts.dir, name);
      const s = await stat(path);
      if ((s.mode & 0o077) !== 0) await chmod(path, 0o600);
      const seg = new Segment(Number(m[1]), path, s.mtimeMs);
      Object.assign(seg, { bytes: s.size, written: s.size, sealed: true, spilled: true });
      recovered.push(seg);
    }
    if (recovered.length)
      opts.logger.info('call spool: replaying segments left by an earlier run', {
        segments: recovered.length,
      });
    return new Spool(opts, recovered);
  }

  set onUnspooled(fn: (entries: SpoolEntry[]) => void) {
    this.#opts.onUnspooled = fn;
  }

  /** Buffers the entry's line and sets `entry.seg`; false when there is no room (or the disk is failing). */
  append(entry: SpoolEntry): boolean {
    if (this.#closed || Date.now() < this.#failedUntil) return this.#refuse();
    // The spool's line (CRC, space, COPY line, newline) is made when it is written.
    const size = Buffer.byteLength(entry.line) + SPOOL_LINE_EXTRA;
    if (this.#bytes + size > this.#opts.maxBytes) {
      if (!this.#full) {
        this.#full = true;
        this.#opts.logger.error(
          'call spool full: new call records are kept in memory only until PostgreSQL takes them',
          {
            spoolBytes: this.#bytes,
            maxBytes: this.#opts.maxBytes,
            dir: this.#opts.dir,
          },
        );
      }
      return this.#refuse();
    }
    if (this.#full) {
      this.#full = false;
      this.#opts.logger.warn('call spool has room again', {
        spoolBytes: this.#bytes,
        unspooled: this.unspooled,
      });
    }
    this.#error = null;
    let seg = this.#active;
    if (seg && seg.bytes > 0 && seg.bytes + size > this.#opts.segmentBytes) this.seal(seg);
    seg = this.#active ??= this.#newSegment();
    entry.seg = seg;
    seg.bytes += size;
    seg.outstanding++;
    seg.buffered++;
    this.#bytes += size;
    this.#buffer.push({ entry, size, seg });
    if (!this.#writeScheduled) {
      this.#writeScheduled = true;
      setImmediate(this.#writeSoon);
    }
    return true;
  }

  /** What was appended during this turn goes to the file in one write. */
  readonly #writeSoon = (): void => {
    this.#writeScheduled = false;
    void this.#run(false);
  };

  #refuse(): false {
    this.unspooled++;
    return false;
  }

  #newSegment(): Segment {
    const seq = this.#nextSeq++;
    const seg = new Segment(
      seq,
      join(this.#opts.dir, `calls-${String(seq).padStart(12, '0')}.tsv`),
      Date.now(),
    );
    this.#segments.set(seq, seg);
    return seg;
  }

  /** No more appends to this segment; it is deleted once its records are committed. */
  seal(seg: Segment): void {
    seg.sealed = true;
    if (this.#active === seg) this.#active = null;
    this.#settle(seg);
  }

  /** PostgreSQL committed `n` records of this segment. */
  release(seg: Segment, n: number): void {
    seg.outstanding -= n;
    this.#settle(seg);
  }

  /** Reads a spilled segment back (all of it is written first); it is then outstanding until committed. */
  async read(seg: Segment): Promise<CallRecord[]> {
    this.seal(seg);
    await this.flush();
    const text = await readFile(seg.path, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return '';
      throw err;
    });
    const { records, skipped } = decodeSegment(text);
    if (skipped) {
      this.skippedLines += skipped;
      this.#opts.logger.warn('call spool: skipped lines that were torn or damaged', {
        segment: seg.path,
        skipped,
      });
    }
    seg.spilled = false;
    seg.outstanding = records.length;
    this.#settle(seg);
    return records;
  }

  /** Writes and fdatasyncs what is buffered now. */
  flush(): Promise<void> {
    return this.#run(true);
  }

  /** One round at a time: the buffered lines written, then (`sync`) everything written fdatasync'ed. */
  async #run(sync: boolean): Promise<void> {
    while (this.#writing) await this.#writing;
    if (sync && this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    const idle = sync
      ? this.#buffer.length === 0 && this.#unsynced.size === 0 && this.#settleLater.size === 0
      : this.#buffer.length === 0;
    if (idle) return;
    const round = async () => {
      await this.#writeRound();
      if (sync) await this.#syncRound();
    };
    this.#writing = round().finally(() => (this.#writing = null));
    await this.#writing;
  }

  async #writeRound(): Promise<void> {
    const batch = this.#buffer;
    this.#buffer = [];
    for (let i = 0; i < batch.length; ) {
      const seg = batch[i]!.seg;
      let j = i;
      while (j < batch.length && batch[j]!.seg === seg) j++;
      const group = batch.slice(i, j);
      i = j;
      try {
        if (!seg.handle) {
          seg.handle = await open(seg.path, 'a', 0o600);
          this.#dirUnsynced = true;
        }
        // A synchronous write on this thread (the call log's, not the request path's): a few
        // microseconds into the page cache, where a threadpool write would wake two threads.
        const data = Buffer.from(group.map((g) => spoolLine(g.entry.line)).join(''));
        for (let at = 0; at < data.length; ) at += writeSync(seg.handle.fd, data, at);
        seg.written += data.length;
        seg.buffered -= group.length;
        this.#unsynced.add(seg);
      } catch (err) {
        await this.#failed(seg, group, err);
      }
    }
    if (this.#unsynced.size > 0) this.#timer ??= setTimeout(() => void this.flush(), this.#opts.syncMs);
  }

  /** Group commit: what was written since the last one is fdatasync'ed; segments done with are then closed. */
  async #syncRound(): Promise<void> {
    const touched = [...this.#unsynced];
    this.#unsynced.clear();
    try {
      if (this.#dirUnsynced) {
        this.#dirUnsynced = false;
        await syncDir(this.#opts.dir);
      }
      await Promise.all(touched.map((seg) => seg.handle?.datasync()));
    } catch (err) {
      this.#opts.logger.error('call spool fdatasync failed', { error: err });
    }
    for (const seg of touched) this.#settleLater.add(seg);
    // Commits that land while segments are being closed are settled in this round too.
    while (this.#settleLater.size > 0) {
      const segs = [...this.#settleLater];
      this.#settleLater.clear();
      for (const seg of segs) await this.#settleNow(seg);
    }
  }

  async #failed(
    seg: Segment,
    group: Array<{ entry: SpoolEntry; size: number }>,
    err: unknown,
  ): Promise<void> {
    const code = (err as NodeJS.ErrnoException)?.code ?? 'EIO';
    if (this.#error !== code)
      this.#opts.logger.error('call spool write failed: new call records are kept in memory only', {
        error: err,
        code,
      });
    this.#error = code;
    this.#failedUntil = Date.now() + RETRY_AFTER_ERROR_MS;
    await seg.handle?.truncate(seg.written).catch(() => {});
    seg.sealed = true;
    if (this.#active === seg) this.#active = null;
    const lost: SpoolEntry[] = [];
    for (const { entry, size } of group) {
      seg.bytes -= size;
      this.#bytes -= size;
      seg.buffered--;
      if (entry.seg === seg) {
        entry.seg = null;
        if (!entry.done) seg.outstanding--;
        lost.push(entry);
      }
      this.unspooled++;
    }
    this.#settleLater.add(seg);
    this.#opts.onUnspooled?.(lost.filter((e) => !e.done));
  }

  #settle(seg: Segment): void {
    if (this.#writing) this.#settleLater.add(seg);
    else void this.#settleNow(seg);
  }

  async #settleNow(seg: Segment): Promise<void> {
    // A segment written since the last group commit is closed after it, not before.
    if (seg.buffered > 0 || seg.spilled || this.#unsynced.has(seg) || !this.#segments.has(seg.seq)) return;
    if (seg.outstanding <= 0 && this.#active === seg && !this.#closed) {
      seg.sealed = true;
      this.#active = null;
    }
    if (!seg.sealed) return;
    const handle = seg.handle;
    seg.handle = null;
    const remove = seg.outstanding <= 0;
    if (remove) {
      this.#segments.delete(seg.seq);
      this.#bytes -= seg.bytes;
    }
    try {
      await handle?.close();
      if (remove)
        await unlink(seg.path).catch((err: NodeJS.ErrnoException) =>
          err.code === 'ENOENT' ? undefined : Promise.reject(err),
        );
    } catch (error) {
      this.#opts.logger.warn('call spool: could not close or delete a segment', { segment: seg.path, error });
    }
  }

  status(): SpoolStatus {
    let oldest: number | null = null;
    for (const seg of this.#segments.values())
      oldest = oldest === null ? seg.createdAt : Math.min(oldest, seg.createdAt);
    return {
      bytes: this.#bytes,
      segments: this.#segments.size,
      full: this.#full,
      error: Date.now() < this.#failedUntil ? this.#error : null,
      oldestSegmentAt: oldest,
    };
  }

  /** Writes and syncs what is buffered, closes the files and releases the lock; segments stay for the next start. */
  async close(): Promise<void> {
    await this.flush();
    this.#closed = true;
    for (const seg of this.#segments.values()) await seg.handle?.close().catch(() => {});
    await unlink(join(this.#opts.dir, 'lock')).catch(() => {});
  }
}
