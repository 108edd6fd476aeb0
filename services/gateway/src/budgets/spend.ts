/** A reset period of a spend counter: [start, end) in ms, named by `label`. */
export interface SpendPeriod {
  label: string;
  start: number;
  end: number;
}

/**
 * Period-to-date spend per scope (a key, a member or an account id) in micro-USD (integers, so
 * shared counters add exactly). Seeded once per scope and period from the hourly rollups, then
 * kept current by adding each call's cost as it is recorded: no database read per request.
 */
export interface SpendLedger {
  /**
   * The scope's spend this period; `seed` reads the rollups when the ledger has no figure yet.
   * `hardCap`: a refusal hangs on the figure, so a ledger that cannot get it may refuse instead
   * (a GatewayError, which admission answers as it is).
   */
  spent(
    scopeId: string,
    period: SpendPeriod,
    seed: () => Promise<number>,
    hardCap?: boolean,
  ): number | Promise<number>;
  /** Adds a recorded call's cost if the scope's period is tracked; answers the new figure (null: not tracked). */
  add(scopeId: string, label: string, microUsd: number): number | null | Promise<number | null>;
  close?(): Promise<void>;
}

type Entry = ({ value: number } | { pending: Promise<number>; extra: number }) & { end: number };

export class MemorySpendLedger implements SpendLedger {
  readonly #entries = new Map<string, Entry>();

  spent(scopeId: string, period: SpendPeriod, seed: () => Promise<number>): number | Promise<number> {
    const id = `${scopeId}:${period.label}`;
    const entry = this.#entries.get(id);
    if (entry && 'value' in entry) return entry.value;
    if (entry) return entry.pending.then(() => this.#value(id));
    const pending = seed().then(
      (value) => {
        const current = this.#entries.get(id);
        const extra = current && 'extra' in current ? current.extra : 0;
        this.#entries.set(id, { value: value + extra, end: period.end });
        return value + extra;
      },
      (err) => {
        this.#entries.delete(id);
        throw err;
      },
    );
    this.#forgetEndedBefore(period.start);
    this.#entries.set(id, { pending, extra: 0, end: period.end });
    return pending;
  }

  add(scopeId: string, label: string, microUsd: number): number | null {
    const entry = this.#entries.get(`${scopeId}:${label}`);
    if (!entry) return null;
    if ('value' in entry) return (entry.value += microUsd);
    entry.extra += microUsd;
    return null;
  }

  #value(id: string): number {
    const entry = this.#entries.get(id);
    return entry && 'value' in entry ? entry.value : 0;
  }

  /** A period starting now means every period that ended by then is over. */
  #forgetEndedBefore(t: number): void {
    for (const [id, entry] of this.#entries) if (entry.end <= t) this.#entries.delete(id);
  }
}
