import { databaseUnreachable } from '../lib/errors';
import { databaseUnavailable, type Store } from '../store';
import {
  HELD,
  type HoldItem,
  type Reserved,
  type Settled,
  type SpendLedger,
  type SpendPeriod,
} from '../budgets/spend';

type SpendQueries = Store['spend'];

interface Figure {
  value: number;
  end: number;
}

/**
 * Spend counters in PostgreSQL, shared by instances that have no Redis. Admission's first
 * look (is the cap already reached?) reads the figure this instance last saw, with no round
 * trip; the hold a capped call takes is decided by PostgreSQL, under a lock on the counters.
 */
export class PostgresSpendLedger implements SpendLedger {
  readonly #q: SpendQueries;
  readonly #figures = new Map<string, Figure>();
  readonly #seeding = new Map<string, Promise<number>>();

  constructor(queries: SpendQueries) {
    this.#q = queries;
  }

  spent(scopeId: string, period: SpendPeriod, seed: () => Promise<number>): number | Promise<number> {
    const id = `${scopeId}:${period.label}`;
    const figure = this.#figures.get(id);
    if (figure) return figure.value;
    let pending = this.#seeding.get(id);
    if (!pending) {
      pending = this.#read(scopeId, period, seed).finally(() => this.#seeding.delete(id));
      this.#seeding.set(id, pending);
    }
    return pending;
  }

  async #read(scopeId: string, period: SpendPeriod, seed: () => Promise<number>): Promise<number> {
    const value =
      (await this.#q.get(scopeId, period.label)) ??
      (await this.#q.seed(scopeId, period.label, await seed(), new Date(period.end)));
    this.#note(`${scopeId}:${period.label}`, value, period.end);
    return value;
  }

  async add(scopeId: string, label: string, microUsd: number): Promise<number | null> {
    const total = await this.#q.add(scopeId, label, microUsd);
    if (total !== null) this.#note(`${scopeId}:${label}`, total);
    return total;
  }

  async reserve(holdId: string, items: readonly HoldItem[], until: number, now: number): Promise<Reserved> {
    const r = await this.#q
      .reserve(
        holdId,
        items.map((it) => ({
          scope: it.scopeId,
          label: it.period.label,
          microUsd: it.microUsd,
          limitMicro: it.limitMicro,
        })),
        new Date(until),
        new Date(now),
      )
      .catch(unreachable);
    return r.refused === -1 ? HELD : r;
  }

  async settle(holdId: string, items: readonly Settled[]): Promise<(number | null)[]> {
    const totals = await this.#q.settle(
      holdId,
      items.map((it) => ({ scope: it.scopeId, label: it.label, microUsd: it.microUsd })),
    );
    items.forEach((it, i) => {
      const t = totals[i];
      if (t != null) this.#note(`${it.scopeId}:${it.label}`, t);
    });
    return totals;
  }

  /** Keeps the latest figure PostgreSQL answered (other instances' charges arrive with this one's). */
  #note(id: string, value: number, end?: number): void {
    const f = this.#figures.get(id);
    if (f) f.value = value;
    else if (end !== undefined) {
      if (this.#figures.size >= 100_000) this.#figures.clear();
      this.#figures.set(id, { value, end });
    }
  }
}

/**
 * A hard cap's hold is taken in PostgreSQL, under a lock shared by every instance: while the
 * database is unreachable it cannot be taken, and the call is refused with a 503 its client
 * retries, rather than let through past a cap nobody can check.
 */
function unreachable(error: unknown): never {
  if (!databaseUnavailable(error)) throw error;
  throw databaseUnreachable('This call falls under a hard spend cap, which');
}
