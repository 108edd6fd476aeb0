/** Who may pick a kept stream up again: the same account, and the same key or member. */
export interface StreamOwner {
  accountId: string;
  keyId: string;
  memberId: string | null;
}

/** One event as it went to the client: its `id: <call id>:<seq>` line, its lines, the blank line. */
export interface KeptEvent {
  seq: number;
  frame: string;
}

/** How a kept stream ended: with the upstream, or when the bound on its bytes was reached. */
export type StreamEnd = 'done' | 'truncated';

export interface KeptStreamOptions {
  /** How long a stream's events are kept after its last event (default 10 minutes). */
  ttlMs: number;
  /** Bytes of events kept per call (default 8 MiB); past it the rest is not kept. */
  maxBytes: number;
}

/** Where the events of resumable calls are kept, so a client can pick a stream up again. */
export interface StreamEvents {
  /** Starts keeping a call's events. */
  open(callId: string, owner: StreamOwner): KeptStream;
  owner(callId: string): Promise<StreamOwner | null>;
  /**
   * The events after `after`, then the live ones as they come, until the stream ends (the
   * generator returns how) or `signal` aborts (returns null). Null at once when the call is
   * unknown or its events expired.
   */
  follow(callId: string, after: number, signal: AbortSignal): AsyncGenerator<KeptEvent, StreamEnd | null>;
  close(): Promise<void>;
}

/** The writing side of one call's kept events, with the per-call byte bound. */
export abstract class KeptStream {
  #bytes = 0;
  #seq = 0;
  #ended = false;
  readonly #maxBytes: number;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  get seq(): number {
    return this.#seq;
  }

  /** Takes the next sequence number for an event; keeps its frame while under the bound. */
  add(frame: string): void {
    if (this.#ended) return;
    const seq = ++this.#seq;
    this.#bytes += frame.length;
    if (this.#bytes > this.#maxBytes) {
      this.#ended = true;
      return this.finish(seq, 'truncated');
    }
    this.keep(seq, frame);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.finish(this.#seq + 1, 'done');
  }

  protected abstract keep(seq: number, frame: string): void;
  protected abstract finish(seq: number, how: StreamEnd): void;
}

export const DEFAULT_KEPT: KeptStreamOptions = { ttlMs: 600_000, maxBytes: 8 * 1024 * 1024 };
