/**
 * Month-to-date spend per key in micro-USD (integers, so shared counters add exactly). Seeded once per key and month from the hourly rollups, then
 * kept current by adding each call's cost as it is recorded: no database read per request.
 */
export interface SpendLedger {
  /** The key's spend this month; `seed` reads the rollups when the ledger has no figure yet. */
  spent(keyId: string, month: string, seed: () => Promise<number>): number | Promise<number>;
  /** Adds a recorded call's cost, if the key's month is being tracked. */
  add(keyId: string, month: string, microUsd: number): void | Promise<void>;
  close?(): Promise<void>;
}

type Entry = { value: number } | { pending: Promise<number>; extra: number };

export class MemorySpendLedger implements SpendLedger {
  readonly #entries = new Map<string, Entry>();

  spent(keyId: string, month: string, seed: () => Promise<number>): number | Promise<number> {
    const id = `${keyId}:${month}`;
    const entry = this.#entries.get(id);
    if (entry && 'value' in entry) return entry.value;
    if (entry) return entry.pending.then(() => this.#value(id));
    const pending = seed().then(
      (value) => {
        const current = this.#entries.get(id);
        const extra = current && 'extra' in current ? current.extra : 0;
        this.#entries.set(id, { value: value + extra });
        return value + extra;
      },
      (err) => {
        this.#entries.delete(id);
        throw err;
      },
    );
    this.#entries.set(id, { pending, extra: 0 });
    this.#forgetOtherMonths(month);
    return pending;
  }

  add(keyId: string, month: string, microUsd: number): void {
    const entry = this.#entries.get(`${keyId}:${month}`);
    if (!entry) return;
    if ('value' in entry) entry.value += microUsd;
    else entry.extra += microUsd;
  }

  #value(id: string): number {
    const entry = this.#entries.get(id);
    return entry && 'value' in entry ? entry.value : 0;
  }

  #forgetOtherMonths(month: string): void {
    for (const id of this.#entries.keys()) if (!id.endsWith(`:${month}`)) this.#entries.delete(id);
  }
}
