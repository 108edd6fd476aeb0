import { createHash } from 'node:crypto';

// RFC 8628 §3.4–3.5 (read 2026-11-29): the client waits `interval` seconds (5 when not given)
// between polls, and adds 5 seconds to it for every `slow_down`.
const DEFAULT_INTERVAL_S = 5;
const SLOW_DOWN_S = 5;
const DEFAULT_LIFE_S = 600;
const MAX_TRACKED = 10_000;

interface Poll {
  /** Earliest time the next poll goes to the provider. */
  next: number;
  intervalS: number;
  until: number;
}

/**
 * The device flow's pace, kept by Keygate per device code (hashed), so a helper polling too fast
 * is answered `slow_down` here and never relayed to the provider with the client secret. Kept
 * per instance: a poll that lands on another instance first is let through once.
 */
export class DevicePolls {
  readonly #polls = new Map<string, Poll>();
  readonly #clock: () => number;

  constructor(clock: () => number) {
    this.#clock = clock;
  }

  started(accountId: string, deviceCode: string, intervalS: number, expiresInS: number): void {
    const now = this.#clock();
    this.#prune(now);
    this.#polls.set(key(accountId, deviceCode), {
      next: now + intervalS * 1000,
      intervalS,
      until: now + expiresInS * 1000,
    });
  }

  /** Null: ask the provider now. A number: answer `slow_down` with this interval, without asking. */
  admit(accountId: string, deviceCode: string): number | null {
    const now = this.#clock();
    const k = key(accountId, deviceCode);
    let p = this.#polls.get(k);
    if (!p) {
      this.#prune(now);
      p = { next: now, intervalS: DEFAULT_INTERVAL_S, until: now + DEFAULT_LIFE_S * 1000 };
      this.#polls.set(k, p);
    }
    if (now < p.next) return this.slowDown(accountId, deviceCode);
    p.next = now + p.intervalS * 1000;
    return null;
  }

  /** A `slow_down` (the provider's or Keygate's): the interval grows by 5 seconds from now on. */
  slowDown(accountId: string, deviceCode: string): number {
    const p = this.#polls.get(key(accountId, deviceCode));
    if (!p) return DEFAULT_INTERVAL_S + SLOW_DOWN_S;
    p.intervalS += SLOW_DOWN_S;
    p.next = this.#clock() + p.intervalS * 1000;
    return p.intervalS;
  }

  finished(accountId: string, deviceCode: string): void {
    this.#polls.delete(key(accountId, deviceCode));
  }

  #prune(now: number): void {
    if (this.#polls.size < MAX_TRACKED) return;
    for (const [k, p] of this.#polls) if (p.until <= now) this.#polls.delete(k);
    // Still full: the oldest go first (a Map iterates in insertion order).
    for (const k of this.#polls.keys()) {
      if (this.#polls.size < MAX_TRACKED) break;
      this.#polls.delete(k);
    }
  }
}

const key = (accountId: string, deviceCode: string) =>
  createHash('sha256').update(accountId).update('\0').update(deviceCode).digest('base64url');
