import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { CallRecord } from '../lib/call-record';
import { usageFigures } from '../usage/usage';
import type { BucketSpec, Buckets, TakeResult } from './buckets';

const MINUTE = 60_000;

/** A call holding tokens of its key's tokens-per-minute bucket until it settles. */
interface TokenHold {
  keyId: string;
  tpm: number;
  tokens: number;
}

/**
 * A key's requests per minute and tokens per minute (input, cache writes and output; cache
 * reads are free, as at the provider), as token buckets shared through `buckets`. A call
 * takes its ceiling of tokens when admitted and gives back what it did not use when it
 * settles, so calls admitted together cannot spend more than the bucket holds.
 */
export class RateLimits {
  readonly #buckets: Buckets;
  readonly #clock: () => number;
  readonly #logger: Logger;
  /** Keys with a token limit, as last admitted: calls without a hold are charged to them. */
  readonly #tpm = new Map<string, number>();
  readonly #holds = new Map<string, TokenHold>();

  constructor(buckets: Buckets, clock: () => number, logger: Logger) {
    this.#buckets = buckets;
    this.#clock = clock;
    this.#logger = logger;
  }

  /** Before the body: is a token left, and a request? Throws the 429. */
  async check(keyId: string, rpm: number | null, tpm: number | null): Promise<void> {
    // Limits can be removed while the key is in use: stop charging it as soon as they are.
    if (tpm != null) this.#tpm.set(keyId, tpm);
    else if (this.#tpm.size > 0) this.#tpm.delete(keyId);
    const now = this.#clock();
    if (tpm != null) {
      const r = await this.#buckets.take(tokenBucket(keyId, tpm), 0, 1, now);
      if (!r.ok)
        throw limited(
          'tokens',
          tpm,
          r,
          now,
          `This key's rate limit of ${tpm} tokens per minute is exceeded.`,
        );
    }
    if (rpm != null) {
      const r = await this.#buckets.take(requestBucket(keyId, rpm), 1, 1, now);
      if (!r.ok)
        throw limited(
          'requests',
          rpm,
          r,
          now,
          `This key's rate limit of ${rpm} requests per minute is exceeded.`,
        );
    }
  }

  /**
   * Takes the call's ceiling of tokens (at most the whole bucket: a call larger than the
   * limit waits for a full bucket) or throws the 429.
   */
  async reserve(callId: string, keyId: string, tpm: number, ceiling: number): Promise<void> {
    const tokens = Math.min(ceiling, tpm);
    const now = this.#clock();
    const r = await this.#buckets.take(tokenBucket(keyId, tpm), tokens, tokens, now);
    if (!r.ok)
      throw limited(
        'tokens',
        tpm,
        r,
        now,
        `This key's rate limit of ${tpm} tokens per minute cannot take this call now: it may use up to ${ceiling} tokens (its input and max_tokens), and calls in flight hold the rest.`,
      );
    this.#holds.set(callId, { keyId, tpm, tokens });
  }

  /** Charges a finished call's tokens: what it used beyond its hold, or gives back what it held and did not use. */
  settle(record: CallRecord): void {
    const hold = this.#holds.size > 0 ? this.#holds.get(record.id) : undefined;
    if (hold) this.#holds.delete(record.id);
    const tpm = hold?.tpm ?? (record.keyId ? this.#tpm.get(record.keyId) : undefined);
    if (tpm === undefined || !record.keyId) return;
    const used = record.usage ? tokensOf(record) : 0;
    const charge = used - (hold?.tokens ?? 0);
    if (charge !== 0)
      Promise.resolve(
        this.#buckets.take(tokenBucket(record.keyId, tpm), charge, -Infinity, this.#clock()),
      ).catch(this.#chargeFailed);
  }

  // Charges happen after the answer: a failure must not become an unhandled rejection.
  readonly #chargeFailed = (error: unknown): void =>
    this.#logger.warn('charging a call to its rate limits failed', { error });
}

function tokensOf(record: CallRecord): number {
  const u = usageFigures(record.usage);
  return u.inputTokens + u.cacheCreationInputTokens + u.outputTokens;
}

const requestBucket = (keyId: string, rpm: number): BucketSpec => ({
  key: `rpm:${keyId}`,
  capacity: rpm,
  periodMs: MINUTE,
});
const tokenBucket = (keyId: string, tpm: number): BucketSpec => ({
  key: `tpm:${keyId}`,
  capacity: tpm,
  periodMs: MINUTE,
});

/** 429 with `retry-after` and the provider's rate-limit headers for the exhausted limit. */
function limited(
  kind: 'requests' | 'tokens',
  limit: number,
  r: TakeResult,
  now: number,
  message: string,
): GatewayError {
  const retryAfter = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
  return new GatewayError('rate_limit_error', `${message} Retry after ${retryAfter} s.`, {
    headers: {
      'retry-after': String(retryAfter),
      [`anthropic-ratelimit-${kind}-limit`]: String(limit),
      [`anthropic-ratelimit-${kind}-remaining`]: String(Math.max(0, Math.floor(r.remaining))),
      [`anthropic-ratelimit-${kind}-reset`]: new Date(now + r.resetMs)
        .toISOString()
        .replace(/\.\d{3}Z$/, 'Z'),
    },
  });
}
