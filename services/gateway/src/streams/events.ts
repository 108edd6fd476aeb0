import { KeptBudget, type Held, type KeptCaps } from './budget';

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
  /** Bytes kept over all of a key's / an account's / every stream (see KeptBudget); none: no bound. */
  caps?: KeptCaps;
}

const NO_CAPS: KeptCaps = { perKey: Infinity, perAccount: Infinity, total: Infinity };

/** The budget a backend shares between its streams. */
export const keptBudget = (opts: KeptStreamOptions, now?: () => number) =>
  new KeptBudget(opts.caps ?? NO_CAPS, now);

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

/** The writing side of one call's kept events, with the per-call byte bound and the shared caps. */
export abstract class KeptStream {
  #bytes = 0;
  #seq = 0;
  #ended = false;
  readonly #opts: KeptStreamOptions;
  readonly #budget: KeptBudget;
  readonly #held: Held;
  readonly #now: () => number;

  constructor(opts: KeptStreamOptions, budget: KeptBudget, held: Held, now: () => number = Date.now) {
    this.#opts = opts;
    this.#budget = budget;
    this.#held = held;
    this.#now = now;
  }

  /** Its client went away: the stream may go first when a cap is reached. */
  clientLeft(): void {
    this.#held.client = false;
  }

  get seq(): number {
    return this.#seq;
  }

  /** Takes the next sequence number for an event; keeps its frame while under the bound. */
  add(frame: string): void {
    if (this.#ended) return;
    const seq = ++this.#seq;
    this.#bytes += frame.length;
    if (this.#bytes > this.#opts.maxBytes) return this.#stop(seq, 'truncated');
    // Past a cap with nothing older to let go: this stream is no longer kept (its events are gone).
    if (!this.#budget.charge(this.#held, frame.length)) {
      this.#ended = true;
      return;
    }
    this.keep(seq, frame);
  }

  end(): void {
    if (this.#ended) return;
    this.#stop(this.#seq + 1, 'done');
  }

  #stop(seq: number, how: StreamEnd): void {
    this.#ended = true;
    // Dropped for a cap meanwhile: nothing of it is kept, not even how it ended.
    if (this.#budget.reading(this.#held.id) !== this.#held) return;
    this.#held.ended = true;
    this.#held.expiresAt = this.#now() + this.#opts.ttlMs;
    this.finish(seq, how);
  }

  protected abstract keep(seq: number, frame: string): void;
  protected abstract finish(seq: number, how: StreamEnd): void;
}

export const DEFAULT_KEPT: KeptStreamOptions = { ttlMs: 600_000, maxBytes: 8 * 1024 * 1024 };
