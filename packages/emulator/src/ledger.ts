import type { Endpoint, LedgerEntry, Usage } from './types';

type Waiter = {
  predicate: (entry: LedgerEntry) => boolean;
  resolve: (entry: LedgerEntry) => void;
  timer: NodeJS.Timeout;
};

/**
 * Everything the emulator served, so tests can reconcile a gateway's accounting with what the
 * "provider" really sent. Entries appear when a request arrives and are finalised
 * (`endedAt` set) when its response ends, errors, or the client goes away.
 */
export class Ledger {
  entries: LedgerEntry[] = [];
  readonly #limit: number;
  #waiters: Waiter[] = [];

  constructor(limit = 10_000) {
    this.#limit = Math.max(1, limit);
  }

  /** Latest entry for a message id (`msg_…`). */
  find(messageId: string): LedgerEntry | undefined {
    return this.#findLast((e) => e.messageId === messageId);
  }

  /** The entry whose response carried this `request-id`. */
  byRequestId(requestId: string): LedgerEntry | undefined {
    return this.#findLast((e) => e.requestId === requestId);
  }

  last(): LedgerEntry | undefined {
    return this.entries[this.entries.length - 1];
  }

  clear(): void {
    this.entries = [];
  }

  /**
   * Resolves with the first *finalised* entry (`endedAt !== null`) matching `predicate`,
   * already there or yet to come; rejects after `timeoutMs`.
   */
  waitFor(predicate: (entry: LedgerEntry) => boolean, timeoutMs = 5_000): Promise<LedgerEntry> {
    const done = this.entries.find((e) => e.endedAt !== null && predicate(e));
    if (done) return Promise.resolve(done);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        predicate,
        resolve,
        timer: setTimeout(() => {
          this.#waiters = this.#waiters.filter((w) => w !== waiter);
          reject(new Error(`ledger.waitFor: no matching finalised entry within ${timeoutMs} ms`));
        }, timeoutMs),
      };
      this.#waiters.push(waiter);
    });
  }

  /** @internal Called by the router when a request arrives. */
  open(
    requestId: string,
    endpoint: Endpoint,
    headers: Record<string, string>,
    scenario: string | null,
    now: number,
  ): LedgerEntry {
    const entry: LedgerEntry = {
      requestId,
      messageId: null,
      endpoint,
      model: null,
      stream: false,
      status: 0,
      errorType: null,
      scenario,
      usage: null,
      complete: false,
      eventsSent: 0,
      headers,
      startedAt: now,
      endedAt: null,
    };
    // Trim in batches so a long benchmark pays for a splice once per limit/4 requests.
    if (this.entries.length >= this.#limit + (this.#limit >> 2)) {
      this.entries.splice(0, this.entries.length - this.#limit + 1);
    }
    this.entries.push(entry);
    return entry;
  }

  /** @internal Finalises an entry once; later calls are ignored. */
  close(entry: LedgerEntry, complete: boolean, now: number, usage?: Usage | null): void {
    if (entry.endedAt !== null) return;
    entry.complete = complete;
    entry.endedAt = now;
    if (usage !== undefined) entry.usage = usage;
    if (this.#waiters.length === 0) return;
    for (const waiter of this.#waiters.slice()) {
      if (!waiter.predicate(entry)) continue;
      clearTimeout(waiter.timer);
      this.#waiters = this.#waiters.filter((w) => w !== waiter);
      waiter.resolve(entry);
    }
  }

  #findLast(match: (e: LedgerEntry) => boolean): LedgerEntry | undefined {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const entry = this.entries[i]!;
      if (match(entry)) return entry;
    }
    return undefined;
  }
}
