import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { CallRecord } from '../lib/call-record';
import type { KeyRecord } from '../tenancy/key-queries';
import { usageFigures } from '../usage/usage';
import type { BucketSpec, Buckets, TakeResult } from './buckets';
import type { Estimate } from './estimate';

const MINUTE = 60_000;

/**
 * A key's rate limits in the provider's shape (https://docs.claude.com/en/api/rate-limits, read
 * 2026-11-29): requests, input tokens and output tokens per minute, each a token bucket that
 * refills continuously. Input tokens are counted as the provider counts them: uncached input and
 * cache writes count, cache reads do not ("for most Claude models, only uncached input tokens
 * count towards your ITPM rate limits"). Output tokens are held at admission and adjusted to the
 * real count when the call ends, as the provider does with its OTPM estimate. `tpm`, Keygate's
 * older combined limit, counts both, the same way.
 */
export type TokenLimit = 'input' | 'output' | 'total';

type Held = Record<TokenLimit, number>;

interface TokenHold {
  keyId: string;
  key: KeyLimits;
  held: Held;
}

interface KeyLimits {
  rpm: number | null;
  itpm: number | null;
  otpm: number | null;
  tpm: number | null;
}

export const limitsOf = (k: KeyRecord): KeyLimits => ({
  rpm: k.limitRpm,
  itpm: k.limitItpm,
  otpm: k.limitOtpm,
  tpm: k.limitTpm,
});

export const tokenLimited = (k: KeyRecord): boolean =>
  k.limitItpm != null || k.limitOtpm != null || k.limitTpm != null;

const LIMIT = { input: 'itpm', output: 'otpm', total: 'tpm' } as const;
const TOKEN_LIMITS = ['input', 'output', 'total'] as const;
/** The provider's header family and the words a refusal uses, per limit. */
const NAMES = {
  requests: ['requests', 'requests'],
  input: ['input-tokens', 'input tokens'],
  output: ['output-tokens', 'output tokens'],
  total: ['tokens', 'tokens'],
} as const;

/**
 * The buckets shared through `buckets`: a call takes what it is expected to use when admitted
 * (at most a whole bucket) and settles at what it used, so the limits hold as the provider's do.
 */
export class RateLimits {
  readonly #buckets: Buckets;
  readonly #clock: () => number;
  readonly #logger: Logger;
  /** Keys with a token limit, as last admitted: calls without a hold are charged to them. */
  readonly #limited = new Map<string, KeyLimits>();
  readonly #holds = new Map<string, TokenHold>();

  constructor(buckets: Buckets, clock: () => number, logger: Logger) {
    this.#buckets = buckets;
    this.#clock = clock;
    this.#logger = logger;
  }

  /**
   * Before the body: is a request left, and a token of each token limit? Throws the 429. With
   * in-memory buckets it answers at once, with no promise (one per call was most of this path's
   * cost); with Redis, after one round trip's wait.
   */
  check(k: KeyRecord): void | Promise<void> {
    const limits = limitsOf(k);
    // Limits can be removed while the key is in use: stop charging it as soon as they are.
    if (tokenLimited(k)) this.#limited.set(k.id, limits);
    else if (this.#limited.size > 0) this.#limited.delete(k.id);
    const now = this.#clock();
    // The token limits are looked at together, before a request is taken.
    const looks = TOKEN_LIMITS.map((kind) => {
      const limit = limits[LIMIT[kind]];
      return limit == null ? null : this.#buckets.take(bucket(kind, k.id, limit), 0, 1, now);
    });
    return then(all(looks), (rs) => {
      rs.forEach((r, i) => {
        const kind = TOKEN_LIMITS[i]!;
        if (r && !r.ok) throw limited(kind, limits[LIMIT[kind]]!, r, now, 1);
      });
      if (limits.rpm == null) return;
      const rpm = limits.rpm;
      return then(this.#buckets.take(bucket('requests', k.id, rpm), 1, 1, now), (r) => {
        if (!r.ok) throw limited('requests', rpm, r, now, 1);
      });
    });
  }

  /**
   * Takes the call's expected tokens from each token limit (all or none; a call larger than a
   * limit waits for the whole bucket) or throws the 429. Answers the `anthropic-ratelimit-*`
   * headers of the limits that apply, as they stand with this call admitted.
   */
  reserve(
    callId: string,
    k: KeyRecord,
    e: Estimate,
  ): Record<string, string> | Promise<Record<string, string>> {
    const limits = limitsOf(k);
    const now = this.#clock();
    const want: Held = {
      input: e.inputTokens,
      output: e.outputTokens,
      total: e.inputTokens + e.outputTokens,
    };
    // All takes at once (one round trip's wait with Redis); what was taken goes back if one refuses.
    const takes = [
      limits.rpm == null ? null : this.#buckets.take(bucket('requests', k.id, limits.rpm), 0, -Infinity, now),
      ...TOKEN_LIMITS.map((kind) => {
        const limit = limits[LIMIT[kind]];
        if (limit == null) return null;
        const tokens = Math.min(want[kind], limit);
        return this.#buckets.take(bucket(kind, k.id, limit), tokens, tokens, now);
      }),
    ];
    return then(all(takes), ([requests, ...taken]) => {
      const held: Held = { input: 0, output: 0, total: 0 };
      const results: [TokenLimit | 'requests', number, TakeResult][] = [];
      let refused: GatewayError | null = null;
      taken.forEach((r, i) => {
        const kind = TOKEN_LIMITS[i]!;
        const limit = limits[LIMIT[kind]];
        if (!r || limit == null) return;
        const tokens = Math.min(want[kind], limit);
        if (!r.ok) refused ??= limited(kind, limit, r, now, tokens, want[kind]);
        else {
          held[kind] = tokens;
          results.push([kind, limit, r]);
        }
      });
      if (refused) {
        this.#giveBack(k.id, limits, held);
        throw refused;
      }
      if (requests && limits.rpm != null) results.push(['requests', limits.rpm, requests]);
      if (tokenLimited(k)) this.#holds.set(callId, { keyId: k.id, key: limits, held });
      return rateHeaders(results, now);
    });
  }

  /** Charges a finished call's tokens: what it used beyond its hold, or gives back what it held and did not use. */
  settle(record: CallRecord): void {
    const hold = this.#holds.size > 0 ? this.#holds.get(record.id) : undefined;
    if (hold) this.#holds.delete(record.id);
    const limits =
      hold?.key ?? (record.keyId && this.#limited.size > 0 ? this.#limited.get(record.keyId) : undefined);
    if (!limits || !record.keyId) return;
    const u = usageFigures(record.usage);
    const input = u.inputTokens + u.cacheCreationInputTokens;
    const used: Held = { input, output: u.outputTokens, total: input + u.outputTokens };
    const held = hold?.held ?? { input: 0, output: 0, total: 0 };
    this.#charge(record.keyId, limits, {
      input: used.input - held.input,
      output: used.output - held.output,
      total: used.total - held.total,
    });
  }

  #giveBack(keyId: string, limits: KeyLimits, held: Held): void {
    this.#charge(keyId, limits, { input: -held.input, output: -held.output, total: -held.total });
  }

  #charge(keyId: string, limits: KeyLimits, charge: Held): void {
    const now = this.#clock();
    for (const kind of TOKEN_LIMITS) {
      const limit = limits[LIMIT[kind]];
      if (limit == null || charge[kind] === 0) continue;
      try {
        const taken = this.#buckets.take(bucket(kind, keyId, limit), charge[kind], -Infinity, now);
        if (taken instanceof Promise) taken.catch(this.#chargeFailed);
      } catch (error) {
        this.#chargeFailed(error);
      }
    }
  }

  // Charges happen after the answer: a failure must not become an unhandled rejection.
  readonly #chargeFailed = (error: unknown): void =>
    this.#logger.warn('charging a call to its rate limits failed', { error });
}

const PREFIX = { requests: 'rpm', input: 'itpm', output: 'otpm', total: 'tpm' } as const;

const bucket = (kind: TokenLimit | 'requests', keyId: string, capacity: number): BucketSpec => ({
  key: `${PREFIX[kind]}:${keyId}`,
  capacity,
  periodMs: MINUTE,
});

/** RFC 3339 to the second, as the provider writes its reset times (toISOString's milliseconds cut). */
const rfc3339 = (t: number) => `${new Date(t).toISOString().slice(0, 19)}Z`;

/** The provider's three headers of one limit, written into `out`. */
function headerSet(
  kind: TokenLimit | 'requests',
  limit: number,
  r: TakeResult,
  now: number,
  out: Record<string, string> = {},
): Record<string, string> {
  const name = NAMES[kind][0];
  out[`anthropic-ratelimit-${name}-limit`] = String(limit);
  out[`anthropic-ratelimit-${name}-remaining`] = String(Math.max(0, Math.floor(r.remaining)));
  out[`anthropic-ratelimit-${name}-reset`] = rfc3339(now + r.resetMs);
  return out;
}

type Maybe<T> = T | Promise<T>;
/** Promise.all only where one of them is a promise: in-memory buckets answer at once. */
const all = <T>(xs: Maybe<T>[]): Maybe<T[]> =>
  xs.some((x) => x instanceof Promise) ? Promise.all(xs) : (xs as T[]);
const then = <T, U>(x: Maybe<T>, f: (t: T) => Maybe<U>): Maybe<U> =>
  x instanceof Promise ? x.then(f) : f(x);

/**
 * The provider's headers for the limits that apply; `tokens-*` is the most restrictive token
 * limit in effect (the provider's definition), the combined one if the key has it.
 */
function rateHeaders(
  results: [TokenLimit | 'requests', number, TakeResult][],
  now: number,
): Record<string, string> {
  const out: Record<string, string> = {};
  let tightest: [number, TakeResult] | null = null;
  for (const [kind, limit, r] of results) {
    headerSet(kind, limit, r, now, out);
    if (kind !== 'requests' && kind !== 'total' && (!tightest || r.remaining < tightest[1].remaining))
      tightest = [limit, r];
  }
  if (tightest && !('anthropic-ratelimit-tokens-limit' in out))
    headerSet('total', tightest[0], tightest[1], now, out);
  return out;
}

/**
 * 429 naming the limit, what the call needs and what is left, with `retry-after` set to when the
 * bucket has refilled enough for it (at least 1 s), and the provider's headers for the limit.
 */
function limited(
  kind: TokenLimit | 'requests',
  limit: number,
  r: TakeResult,
  now: number,
  needed: number,
  expected = needed,
): GatewayError {
  const retryAfter = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
  const words = NAMES[kind][1];
  const left = Math.max(0, Math.floor(r.remaining));
  const what =
    kind === 'requests'
      ? `This key's rate limit of ${limit} requests per minute is reached.`
      : `This key's rate limit of ${limit} ${words} per minute cannot take this call now: it is expected to use about ${expected} ${words}${kind === 'output' ? '' : ' (cache reads are not counted)'}, and ${left} are left with the calls in flight.`;
  return new GatewayError(
    'rate_limit_error',
    `${what} Capacity frees in ${retryAfter} s (retry then). An admin of this account can raise the limit.`,
    {
      reason: `rate_limit:${kind === 'total' ? 'tokens' : kind === 'requests' ? 'requests' : `${kind}_tokens`}`,
      headers: {
        'retry-after': String(retryAfter),
        ...headerSet(kind, limit, r, now),
        ...(kind === 'requests' ? {} : headerSet('total', limit, r, now)),
      },
    },
  );
}
