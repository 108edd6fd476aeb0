import type { Held, KeptBudget } from './budget';
import {
  KeptStream,
  keptBudget,
  type KeptEvent,
  type KeptStreamOptions,
  type StreamEnd,
  type StreamEvents,
  type StreamOwner,
} from './events';

interface Entry {
  owner: StreamOwner;
  held: Held;
  frames: string[];
  end: StreamEnd | null;
  expiresAt: number;
  wake: Set<() => void>;
}

/** Kept events in this process (no REDIS_URL): a client resumes on this instance only. */
export class MemoryStreamEvents implements StreamEvents {
  readonly #calls = new Map<string, Entry>();
  readonly #opts: KeptStreamOptions;
  readonly #now: () => number;
  readonly #budget: KeptBudget;
  // One sweep for all calls, not a timer per call.
  readonly #sweep: NodeJS.Timeout;

  constructor(opts: KeptStreamOptions, now: () => number = Date.now) {
    this.#opts = opts;
    this.#now = now;
    this.#budget = keptBudget(opts, now);
    this.#sweep = setInterval(() => this.#expire(), Math.min(opts.ttlMs, 30_000));
    this.#sweep.unref();
  }

  /** Bytes of events held over all streams. */
  get bytes(): number {
    return this.#budget.total;
  }

  open(callId: string, owner: StreamOwner): KeptStream {
    const held = this.#budget.hold(callId, owner, () => this.#drop(callId, entry));
    const entry: Entry = {
      owner,
      held,
      frames: [],
      end: null,
      expiresAt: this.#now() + this.#opts.ttlMs,
      wake: new Set(),
    };
    this.#calls.set(callId, entry);
    return new MemoryKeptStream(entry, this.#opts, this.#budget, this.#now);
  }

  async owner(callId: string): Promise<StreamOwner | null> {
    return this.#live(callId)?.owner ?? null;
  }

  async *follow(
    callId: string,
    after: number,
    signal: AbortSignal,
  ): AsyncGenerator<KeptEvent, StreamEnd | null> {
    const reading = this.#live(callId) ? this.#budget.reading(callId) : undefined;
    if (reading) reading.readers++;
    try {
      return yield* this.#follow(callId, after, signal);
    } finally {
      if (reading) reading.readers--;
    }
  }

  async *#follow(
    callId: string,
    after: number,
    signal: AbortSignal,
  ): AsyncGenerator<KeptEvent, StreamEnd | null> {
    let next = after + 1;
    for (;;) {
      const entry = this.#live(callId);
      if (!entry) return null;
      while (next <= entry.frames.length) {
        yield { seq: next, frame: entry.frames[next - 1]! };
        next++;
      }
      if (entry.end) return entry.end;
      if (signal.aborted) return null;
      await new Promise<void>((resolve) => {
        const wake = () => {
          entry.wake.delete(wake);
          signal.removeEventListener('abort', wake);
          resolve();
        };
        entry.wake.add(wake);
        signal.addEventListener('abort', wake, { once: true });
      });
      if (signal.aborted) return null;
    }
  }

  async close(): Promise<void> {
    clearInterval(this.#sweep);
    for (const entry of this.#calls.values()) for (const wake of [...entry.wake]) wake();
    this.#calls.clear();
    this.#budget.clear();
  }

  /** Evicted to stay within a cap: gone at once, and a follower is told it ended. */
  #drop(callId: string, entry: Entry): void {
    if (this.#calls.get(callId) !== entry) return;
    this.#calls.delete(callId);
    for (const wake of [...entry.wake]) wake();
  }

  #live(callId: string): Entry | null {
    const entry = this.#calls.get(callId);
    if (!entry) return null;
    // A stream still running is kept whatever its age; the time counts from its end.
    if (entry.end === null || entry.expiresAt > this.#now()) return entry;
    this.#calls.delete(callId);
    this.#budget.release(callId);
    return null;
  }

  #expire(): void {
    const now = this.#now();
    for (const [id, entry] of this.#calls)
      if (entry.end !== null && entry.expiresAt <= now && entry.wake.size === 0) {
        this.#calls.delete(id);
        this.#budget.release(id);
      }
  }
}

class MemoryKeptStream extends KeptStream {
  readonly #entry: Entry;
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(entry: Entry, opts: KeptStreamOptions, budget: KeptBudget, now: () => number) {
    super(opts, budget, entry.held, now);
    this.#entry = entry;
    this.#ttlMs = opts.ttlMs;
    this.#now = now;
  }

  protected keep(_seq: number, frame: string): void {
    this.#entry.frames.push(frame);
    this.#wake();
  }

  protected finish(_seq: number, how: StreamEnd): void {
    this.#entry.end = how;
    this.#entry.expiresAt = this.#now() + this.#ttlMs;
    this.#wake();
  }

  #wake(): void {
    for (const wake of [...this.#entry.wake]) wake();
  }
}
