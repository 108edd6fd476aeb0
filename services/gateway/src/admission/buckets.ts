/**
 * Token buckets, the provider's own rate-limit model: a bucket holds up to `capacity` and
 * refills continuously at `capacity` per `periodMs`, so a limit of N per minute allows bursts
 * of N and a steady N a minute.
 */
export interface BucketSpec {
  key: string;
  capacity: number;
  periodMs: number;
}

export interface TakeResult {
  ok: boolean;
  /** Tokens left after this take (may be negative after a charge). */
  remaining: number;
  /** When refused: how long until `minimum` is available. */
  retryAfterMs: number;
  /** How long until the bucket is full again. */
  resetMs: number;
}

export interface Buckets {
  /**
   * Refills, then takes `cost` if at least `minimum` is available. A `cost` of 0 only checks;
   * `minimum` of -Infinity always charges (down to -capacity, so one huge call costs at most
   * an extra period of waiting); a negative `cost` gives back (up to the capacity).
   */
  take(spec: BucketSpec, cost: number, minimum: number, now: number): TakeResult | Promise<TakeResult>;
  close?(): Promise<void>;
}

interface State {
  tokens: number;
  at: number;
}

/** The pure step shared by both stores: refill from `state` to `now`, then maybe take. */
export function step(
  spec: BucketSpec,
  state: State | undefined,
  cost: number,
  minimum: number,
  now: number,
): { state: State; result: TakeResult } {
  const next = { tokens: state?.tokens ?? spec.capacity, at: state?.at ?? now };
  return { state: next, result: advance(spec, next, cost, minimum, now) };
}

/** `step` on a state of this process's own, changed where it is (no allocation but the result). */
function advance(spec: BucketSpec, state: State, cost: number, minimum: number, now: number): TakeResult {
  const rate = spec.capacity / spec.periodMs;
  let tokens = state.tokens;
  // A clock that went backwards (another instance's) refills nothing.
  if (now > state.at) {
    tokens = Math.min(spec.capacity, tokens + (now - state.at) * rate);
    state.at = now;
  }
  const ok = tokens >= minimum;
  if (ok) tokens = Math.min(spec.capacity, Math.max(tokens - cost, -spec.capacity));
  state.tokens = tokens;
  return {
    ok,
    remaining: tokens,
    retryAfterMs: ok ? 0 : (minimum - tokens) / rate,
    resetMs: (spec.capacity - tokens) / rate,
  };
}

/** Buckets in this process: right for one instance (several need REDIS_URL to share them). */
export class MemoryBuckets implements Buckets {
  readonly #states = new Map<string, State & { periodMs: number }>();
  #lastSweep = 0;

  take(spec: BucketSpec, cost: number, minimum: number, now: number): TakeResult {
    let state = this.#states.get(spec.key);
    if (state === undefined) {
      state = { tokens: spec.capacity, at: now, periodMs: spec.periodMs };
      this.#states.set(spec.key, state);
    }
    state.periodMs = spec.periodMs;
    const result = advance(spec, state, cost, minimum, now);
    this.#sweep(now);
    return result;
  }

  get size(): number {
    return this.#states.size;
  }

  /** A bucket untouched for a whole period is full: forgetting it changes nothing. */
  #sweep(now: number): void {
    if (now - this.#lastSweep < 60_000) return;
    this.#lastSweep = now;
    for (const [key, s] of this.#states) if (now - s.at > s.periodMs) this.#states.delete(key);
  }
}
