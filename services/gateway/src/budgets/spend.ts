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
  /**
   * Holds `microUsd` on each counter for call `holdId` if, on every one, spent + held + it
   * stays within `limitMicro`: all or none, atomically (across instances for shared ledgers).
   * A hold lapses at `until` (a crashed instance's holds do not stay forever).
   */
  reserve(
    holdId: string,
    items: readonly HoldItem[],
    until: number,
    now: number,
  ): Reserved | Promise<Reserved>;
  /** Drops call `holdId`'s hold on each counter and adds what the call really cost (0 on failure). */
  settle(holdId: string, items: readonly Settled[]): (number | null)[] | Promise<(number | null)[]>;
  close?(): Promise<void>;
}

export interface HoldItem {
  scopeId: string;
  period: SpendPeriod;
  microUsd: number;
  limitMicro: number;
}

/** A counter a hold was taken on, kept with what holds it (a message batch) until it is released. */
export interface HeldCounter {
  scopeId: string;
  label: string;
}

export interface Settled {
  scopeId: string;
  label: string;
  microUsd: number;
}

/** `refused`: the index of the first counter the hold did not fit on (-1: held), with what was left on it. */
export interface Reserved {
  refused: number;
  leftMicro: number;
  /** The counter is not seeded yet: seed it (`spent`) and try again. */
  unseeded?: boolean;
}

export const HELD: Reserved = Object.freeze({ refused: -1, leftMicro: 0 });

type Entry = ({ value: number } | { pending: Promise<number>; extra: number }) & { end: number };

export class MemorySpendLedger implements SpendLedger {
  readonly #entries = new Map<string, Entry>();
  /** Per counter: call id → [micro-USD held, lapses at]. */
  readonly #holds = new Map<string, Map<string, [number, number]>>();

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

  reserve(holdId: string, items: readonly HoldItem[], until: number, now: number): Reserved {
    for (let i = 0; i < items.length; i++) {
      const it = items[i]!;
      const id = `${it.scopeId}:${it.period.label}`;
      const entry = this.#entries.get(id);
      if (!entry || !('value' in entry)) return { refused: i, leftMicro: 0, unseeded: true };
      const left = it.limitMicro - entry.value - this.#held(id, now);
      if (it.microUsd > left) return { refused: i, leftMicro: Math.max(0, left) };
    }
    for (const it of items) {
      const id = `${it.scopeId}:${it.period.label}`;
      let holds = this.#holds.get(id);
      if (!holds) this.#holds.set(id, (holds = new Map()));
      holds.set(holdId, [it.microUsd, until]);
    }
    return HELD;
  }

  settle(holdId: string, items: readonly Settled[]): (number | null)[] {
    return items.map((it) => {
      const id = `${it.scopeId}:${it.label}`;
      const holds = this.#holds.get(id);
      if (holds?.delete(holdId) && holds.size === 0) this.#holds.delete(id);
      return it.microUsd > 0 ? this.add(it.scopeId, it.label, it.microUsd) : this.#value(id);
    });
  }

  /** What unlapsed holds keep on a counter (lapsed ones are dropped on the way). */
  #held(id: string, now: number): number {
    const holds = this.#holds.get(id);
    if (!holds) return 0;
    let sum = 0;
    for (const [call, [micro, until]] of holds) {
      if (until <= now) holds.delete(call);
      else sum += micro;
    }
    return sum;
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
