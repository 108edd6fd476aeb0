import type { StreamOwner } from './events';

/** Bounds on the events kept for resumption, summed over streams (the per-call bound is apart). */
export interface KeptCaps {
  perKey: number;
  perAccount: number;
  total: number;
}

/** One kept stream as the budget sees it. */
export interface Held {
  readonly id: string;
  readonly owner: StreamOwner;
  bytes: number;
  /** Its first client is still connected and the stream is running. */
  client: boolean;
  /** Resume requests reading it now (on this instance). */
  readers: number;
  ended: boolean;
  /** When its events expire, once it has ended. */
  expiresAt: number;
  /** Forgets its events in the backend (memory or Redis). */
  readonly drop: () => void;
}

/**
 * What the kept streams of one process hold, per key, per account and in all, and which go when
 * a cap is passed: the oldest abandoned stream of the key (then of the account, then of all)
 * first. Abandoned: nobody reads it (its client left or it ended, and no resume is reading it).
 * When the streams still being read fill a cap alone, the stream that grows past it stops being
 * kept (its live answer goes on; a resume of it is a 404).
 */
export class KeptBudget {
  readonly #caps: KeptCaps;
  readonly #now: () => number;
  // In the order the streams were opened: the first abandoned one found is the oldest.
  readonly #held = new Map<string, Held>();
  readonly #byKey = new Map<string, number>();
  readonly #byAccount = new Map<string, number>();
  #total = 0;
  #swept = 0;

  constructor(caps: KeptCaps, now: () => number = Date.now) {
    this.#caps = caps;
    this.#now = now;
  }

  /** Bytes held in all (tests, metrics). */
  get total(): number {
    return this.#total;
  }

  /** Streams held (tests). */
  get streams(): number {
    return this.#held.size;
  }

  hold(id: string, owner: StreamOwner, drop: () => void): Held {
    // Expired streams are forgotten here too, so the list does not grow where no cap is reached
    // (Redis expires the events itself); at most once a second, one pass over the kept streams.
    if (this.#now() - this.#swept >= 1_000) this.#expire();
    this.release(id);
    const held: Held = { id, owner, bytes: 0, client: true, readers: 0, ended: false, expiresAt: 0, drop };
    this.#held.set(id, held);
    return held;
  }

  /** The stream, while this budget holds it (a resume reading it marks it read; dropped: undefined). */
  reading(id: string): Held | undefined {
    return this.#held.get(id);
  }

  /** Counts `bytes` more for `held`, making room; false when `held` itself had to go. */
  charge(held: Held, bytes: number): boolean {
    if (this.#held.get(held.id) !== held) return false;
    held.bytes += bytes;
    this.#add(held.owner, bytes);
    for (;;) {
      const over = this.#over(held.owner);
      if (!over) return true;
      this.#expire();
      const victim = this.#oldestAbandoned(over) ?? held;
      this.evict(victim);
      if (victim === held) return false;
    }
  }

  /** Forgets a stream's bytes (expired or deleted by its backend); its events are not touched. */
  release(id: string): void {
    const held = this.#held.get(id);
    if (!held) return;
    this.#held.delete(id);
    this.#add(held.owner, -held.bytes);
  }

  /** Drops a stream's events and forgets its bytes. */
  evict(held: Held): void {
    this.release(held.id);
    held.drop();
  }

  clear(): void {
    this.#held.clear();
    this.#byKey.clear();
    this.#byAccount.clear();
    this.#total = 0;
  }

  #over(owner: StreamOwner): ((h: Held) => boolean) | null {
    if ((this.#byKey.get(owner.keyId) ?? 0) > this.#caps.perKey) return (h) => h.owner.keyId === owner.keyId;
    if ((this.#byAccount.get(owner.accountId) ?? 0) > this.#caps.perAccount)
      return (h) => h.owner.accountId === owner.accountId;
    if (this.#total > this.#caps.total) return () => true;
    return null;
  }

  #oldestAbandoned(inScope: (h: Held) => boolean): Held | undefined {
    for (const h of this.#held.values())
      if (h.readers === 0 && (h.ended || !h.client) && inScope(h)) return h;
    return undefined;
  }

  /** Streams whose events have expired on their own hold nothing any more. */
  #expire(): void {
    const now = this.#now();
    this.#swept = now;
    for (const h of [...this.#held.values()])
      if (h.ended && h.readers === 0 && h.expiresAt <= now) this.evict(h);
  }

  #add(owner: StreamOwner, bytes: number): void {
    this.#byKey.set(owner.keyId, (this.#byKey.get(owner.keyId) ?? 0) + bytes);
    this.#byAccount.set(owner.accountId, (this.#byAccount.get(owner.accountId) ?? 0) + bytes);
    this.#total += bytes;
    if (this.#byKey.get(owner.keyId) === 0) this.#byKey.delete(owner.keyId);
    if (this.#byAccount.get(owner.accountId) === 0) this.#byAccount.delete(owner.accountId);
  }
}
