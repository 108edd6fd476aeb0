import type { Principal } from '../auth/resolver';
import type { BudgetGuard } from '../budgets/guard';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { CallRecord } from '../lib/call-record';
import { usageFigures } from '../usage/usage';
import type { BucketSpec, Buckets, TakeResult } from './buckets';

const MINUTE = 60_000;

export interface AdmissionDeps {
  buckets: Buckets;
  /** Budgets and the key's monthly spend cap. */
  budgets: BudgetGuard;
  clock: () => number;
  logger: Logger;
}

/** The call being admitted: only what limits look at. */
export interface AdmittedCall {
  endpoint: string;
}

/**
 * Limits on `POST /v1/messages`: the budgets of the key, its member and its account (the
 * key's monthly spend cap among them), then the key's requests per minute and tokens per
 * minute (input, cache writes and output; cache reads are free, as at the provider). Keys
 * without limits in accounts without budgets cost nothing here: no counter, no await.
 */
export class Admission {
  readonly #deps: AdmissionDeps;
  /** Keys with a token limit, as last admitted: recorded calls are charged to them. */
  readonly #tpm = new Map<string, number>();

  constructor(deps: AdmissionDeps) {
    this.#deps = deps;
  }

  admit(principal: Principal, call: AdmittedCall): void | Promise<void> {
    const { limitRpm: rpm, limitTpm: tpm } = principal.key;
    if (call.endpoint !== 'messages') return;
    // Limits can be removed while the key is in use: stop charging it as soon as they are.
    if (tpm != null) this.#tpm.set(principal.key.id, tpm);
    else if (this.#tpm.size > 0) this.#tpm.delete(principal.key.id);
    const budgets = this.#deps.budgets.admit(principal);
    if (rpm == null && tpm == null) return budgets;
    if (budgets instanceof Promise) return budgets.then(() => this.#rates(principal.key.id, rpm, tpm));
    return this.#rates(principal.key.id, rpm, tpm);
  }

  async #rates(keyId: string, rpm: number | null, tpm: number | null): Promise<void> {
    const now = this.#deps.clock();
    if (tpm != null) {
      const r = await this.#deps.buckets.take(tokenBucket(keyId, tpm), 0, 1, now);
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
      const r = await this.#deps.buckets.take(requestBucket(keyId, rpm), 1, 1, now);
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

  // Charges happen after the answer: a failure must not become an unhandled rejection.
  readonly #chargeFailed = (error: unknown): void =>
    this.#deps.logger.warn('charging a call to its limits failed', { error });

  /** Charges a recorded call to its key's token bucket and to the budgets it counts toward. */
  /** Resolves once every recorded call has been charged to the shared counters. */
  settled(): Promise<void> {
    return this.#deps.budgets.settled();
  }

  observe(record: CallRecord): void {
    this.#deps.budgets.observe(record);
    const tpm = record.keyId ? this.#tpm.get(record.keyId) : undefined;
    if (tpm === undefined || !record.keyId || !record.usage) return;
    const u = usageFigures(record.usage);
    const tokens = u.inputTokens + u.cacheCreationInputTokens + u.outputTokens;
    if (tokens > 0)
      Promise.resolve(
        this.#deps.buckets.take(tokenBucket(record.keyId, tpm), tokens, -Infinity, this.#deps.clock()),
      ).catch(this.#chargeFailed);
  }
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
