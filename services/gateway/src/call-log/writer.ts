import type { Logger } from '../lib/logger';
import type { CallRecord } from './record';

export interface CallSink {
  insertBatch(records: CallRecord[]): Promise<void>;
}

export interface WriterOptions {
  flushIntervalMs: number;
  batchSize?: number;
  /** Past this many queued records (database down for long), new ones are dropped and counted. */
  maxQueued?: number;
  logger: Logger;
}

/**
 * Writes call records in batches, off the request path. A failed batch stays queued and is
 * retried with backoff, so a database outage loses nothing until `maxQueued` is reached.
 */
export class UsageWriter {
  readonly #sink: CallSink;
  readonly #opts: Required<WriterOptions>;
  #queue: CallRecord[] = [];
  #timer: NodeJS.Timeout | null = null;
  #flushing: Promise<void> | null = null;
  #failures = 0;
  #closed = false;
  dropped = 0;
  written = 0;
  /** Records the database refused as data (they are logged by id, then set aside). */
  rejected = 0;

  constructor(sink: CallSink, opts: WriterOptions) {
    this.#sink = sink;
    this.#opts = { batchSize: 500, maxQueued: 200_000, ...opts };
  }

  get pending(): number {
    return this.#queue.length;
  }

  enqueue(record: CallRecord): void {
    if (this.#queue.length >= this.#opts.maxQueued) {
      this.dropped++;
      if (this.dropped % 1000 === 1) this.#opts.logger.error('call log queue full, dropping records', { dropped: this.dropped });
      return;
    }
    this.#queue.push(record);
    if (this.#closed) return;
    if (this.#queue.length >= this.#opts.batchSize && !this.#flushing && this.#failures === 0) void this.flush();
    else this.#schedule(this.#opts.flushIntervalMs);
  }

  #schedule(delay: number): void {
    if (this.#timer || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.flush();
    }, delay);
    this.#timer.unref();
  }

  /** Writes everything queued now; resolves when done or when a batch fails (it is retried later). */
  flush(): Promise<void> {
    this.#flushing ??= this.#drain().finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.slice(0, this.#opts.batchSize);
      const rejectedBefore = this.rejected;
      try {
        await this.#write(batch);
      } catch (err) {
        this.#failures++;
        const delay = Math.min(30_000, this.#opts.flushIntervalMs * 2 ** Math.min(this.#failures, 8));
        this.#opts.logger.warn('call log write failed; will retry', { error: err, queued: this.#queue.length, retryInMs: delay });
        this.#schedule(delay);
        return;
      }
      // Records enqueued meanwhile sit behind the batch; drop exactly what was written.
      this.#queue.splice(0, batch.length);
      this.written += batch.length - (this.rejected - rejectedBefore);
      this.#failures = 0;
    }
  }

  /**
   * Writes a batch; when the database refuses its data (not an outage), halves it until the
   * records it cannot store are found, and sets only those aside, so one bad record never
   * holds back the ones behind it.
   */
  async #write(batch: CallRecord[]): Promise<void> {
    try {
      await this.#sink.insertBatch(batch);
    } catch (err) {
      if (!isDataError(err)) throw err;
      if (batch.length === 1) {
        this.rejected++;
        this.#opts.logger.error('call record refused by the database; set aside', { id: batch[0]!.id, error: err });
        return;
      }
      const half = Math.ceil(batch.length / 2);
      await this.#write(batch.slice(0, half));
      await this.#write(batch.slice(half));
    }
  }

  /** Stops the timer and tries to write what is left, for at most `timeoutMs`. */
  async close(timeoutMs = 5_000): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const deadline = Date.now() + timeoutMs;
    while (this.#queue.length > 0 && Date.now() < deadline) {
      await this.flush();
      if (this.#queue.length > 0) await new Promise((r) => setTimeout(r, 100));
    }
    if (this.#queue.length > 0) this.#opts.logger.error('call log records not written at shutdown', { count: this.#queue.length });
  }
}

// SQLSTATE classes that mean "this data can never be stored": 22 data exception,
// 23 integrity constraint violation, 54 program limit exceeded (e.g. an index row too large).
function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^(22|23|54)/.test(code);
}
