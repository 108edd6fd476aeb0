/** A stream the keep-alive watches. */
export interface QuietStream {
  /** Set by the stream whenever it writes to its client; cleared at each tick. */
  wrote: boolean;
  /** Ticks in a row without a write. */
  quietTicks: number;
  /** Writes an SSE comment line if the stream is between two events. */
  keepAlive(): void;
}

const TICKS = 4;

/**
 * SSE comment lines for streams that would otherwise stay silent past a client's idle
 * timeout (extended thinking can pause for minutes). The upstream's own pings pass through
 * as they come and count as writes; a comment goes in only after `afterMs` (up to 1.25 ×
 * afterMs) with nothing written. One timer for all streams, running only while some are
 * open: no timer or clock read per call or per chunk.
 */
export class SseKeepAlive {
  readonly #streams = new Set<QuietStream>();
  readonly #tickMs: number;
  #timer: NodeJS.Timeout | null = null;

  constructor(afterMs: number) {
    this.#tickMs = Math.max(1, Math.floor(afterMs / TICKS));
  }

  watch(stream: QuietStream): void {
    this.#streams.add(stream);
    if (this.#timer === null) {
      this.#timer = setInterval(() => this.#tick(), this.#tickMs);
      this.#timer.unref();
    }
  }

  unwatch(stream: QuietStream): void {
    this.#streams.delete(stream);
    if (this.#streams.size === 0 && this.#timer !== null) {
      clearInterval(this.#timer);
      this.#timer = null;
    }
  }

  close(): void {
    this.#streams.clear();
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  #tick(): void {
    for (const s of this.#streams) {
      if (s.wrote) {
        s.wrote = false;
        s.quietTicks = 0;
      } else if (++s.quietTicks >= TICKS) {
        s.keepAlive();
      }
    }
  }
}

/** What the gateway writes to keep a silent stream's connection open (a comment: clients ignore it). */
export const KEEP_ALIVE_LINE = ': keygate keep-alive\n\n';
