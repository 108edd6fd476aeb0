import { GatewayError } from '../lib/errors';

export interface AttemptsOptions {
  windowMs?: number;
  clock?: () => number;
  /** Counters kept at most (the oldest go first), so forged addresses cannot grow memory. */
  maxTracked?: number;
}

/**
 * Failed credential attempts per client address and per kind of credential (the key's
 * prefix, or the operator token), in fixed windows. A client past its budget is refused with
 * 429 before its credential is even looked at.
 */
export class FailedAttempts {
  readonly #seen = new Map<string, { count: number; resetAt: number }>();
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #max: number;

  constructor(opts: AttemptsOptions = {}) {
    this.#windowMs = opts.windowMs ?? 60_000;
    this.#now = opts.clock ?? Date.now;
    this.#max = opts.maxTracked ?? 10_000;
  }

  /** Throws rate_limit_error when `client` already failed `budget` times with `kind` in this window. */
  check(kind: string, client: string, budget: number, what: string): void {
    const now = this.#now();
    const seen = this.#seen.get(`${kind}\u0000${client}`);
    if (!seen || seen.resetAt <= now || seen.count < budget) return;
    const seconds = Math.ceil((seen.resetAt - now) / 1000);
    throw new GatewayError(
      'rate_limit_error',
      `Too many invalid ${what} from this client; retry in ${seconds} s.`,
      {
        headers: { 'retry-after': String(seconds) },
      },
    );
  }

  fail(kind: string, client: string): void {
    const id = `${kind}\u0000${client}`;
    const now = this.#now();
    const seen = this.#seen.get(id);
    if (seen && seen.resetAt > now) {
      seen.count++;
      return;
    }
    this.#seen.delete(id);
    this.#seen.set(id, { count: 1, resetAt: now + this.#windowMs });
    for (const key of this.#seen.keys()) {
      if (this.#seen.size <= this.#max) break;
      this.#seen.delete(key);
    }
  }
}
