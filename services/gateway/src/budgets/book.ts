import { DatabaseWatch } from '../store';
import type { BudgetRecord } from './budget-queries';

interface Entry<T> {
  budgets: readonly T[];
  loadedAt: number;
  /** The order its read started in: an older read finishing later never replaces a newer one. */
  seq: number;
}

/**
 * Each account's budgets, in memory: read once per account (and again after a change, which
 * every instance hears within a second through `budgets:<account>` invalidations, or after
 * `ttlMs` as a safety net), so admission never reads them per call.
 */
export class BudgetBook<T = BudgetRecord> {
  readonly #entries = new Map<string, Entry<T>>();
  readonly #inflight = new Map<string, Promise<readonly T[]>>();
  readonly #load: (accountId: string) => Promise<T[]>;
  readonly #ttlMs: number;
  readonly #clock: () => number;
  #seq = 0;
  readonly #database: DatabaseWatch;

  constructor(load: (accountId: string) => Promise<T[]>, opts: { ttlMs: number; clock: () => number }) {
    this.#load = load;
    this.#ttlMs = opts.ttlMs;
    this.#clock = opts.clock;
    this.#database = new DatabaseWatch({ clock: opts.clock, retryMs: 1_000 });
  }

  /**
   * The account's budgets: at once when held, else after one read. While the database is
   * unreachable, the budgets last read stand (a read is tried again at most every second, in
   * the background): a call is admitted on them, not held up by a read that cannot succeed.
   */
  of(accountId: string): readonly T[] | Promise<readonly T[]> {
    const hit = this.#entries.get(accountId);
    const now = this.#clock();
    if (hit && now - hit.loadedAt < this.#ttlMs) return hit.budgets;
    if (hit && this.#database.down) {
      if (!this.#inflight.has(accountId) && this.#database.retryDue()) this.#read(accountId).catch(() => {});
      return hit.budgets;
    }
    return this.#inflight.get(accountId) ?? this.#read(accountId);
  }

  #read(accountId: string): Promise<readonly T[]> {
    const seq = ++this.#seq;
    const epoch = this.#database.epoch;
    const pending: Promise<readonly T[]> = this.#load(accountId)
      .then(
        (budgets) => {
          this.#database.answered(epoch);
          // A change heard while reading wins: the answer is kept as stale (the next admission
          // reads again), never dropped, since the calls admitted on it are charged from it.
          const current = this.#entries.get(accountId);
          if (!current || current.seq < seq) {
            const fresh = this.#inflight.get(accountId) === pending;
            this.#entries.set(accountId, { budgets, loadedAt: fresh ? this.#clock() : -Infinity, seq });
          }
          return budgets;
        },
        (error: unknown) => {
          const held = this.#entries.get(accountId);
          if (!held || !this.#database.failed(error, epoch)) throw error;
          return held.budgets;
        },
      )
      .finally(() => {
        if (this.#inflight.get(accountId) === pending) this.#inflight.delete(accountId);
      });
    this.#inflight.set(accountId, pending);
    return pending;
  }

  /**
   * What is held for the account, stale or not, without reading: calls are charged from this
   * when recorded, which may be minutes after they were admitted.
   */
  cached(accountId: string): readonly T[] | undefined {
    return this.#entries.get(accountId)?.budgets;
  }

  /** Applies a `budgets:<account>` invalidation: the next admission reads them again. */
  apply(payload: string): void {
    const accountId = payload.slice('budgets:'.length);
    const e = this.#entries.get(accountId);
    if (e) e.loadedAt = -Infinity;
    this.#inflight.delete(accountId);
  }
}
