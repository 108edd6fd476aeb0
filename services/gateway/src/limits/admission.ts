import type { Principal } from '../auth/resolver';
import { figureCounts, rowCounts, usageCostCents } from '../billing/prices';
import { monthOf } from '../billing/statement';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { Store } from '../store';
import type { CallRecord } from '../usage/record';
import { usageFigures } from '../usage/usage';
import type { BucketSpec, Buckets, TakeResult } from './buckets';
import type { SpendLedger } from './spend';

const MINUTE = 60_000;

export interface AdmissionDeps {
  buckets: Buckets;
  spend: SpendLedger;
  store: Pick<Store, 'usage'>;
  clock: () => number;
  logger: Logger;
}

/** The call being admitted: only what limits look at. */
export interface AdmittedCall {
  endpoint: string;
  requestId?: string;
}

/**
 * Per-key limits on `POST /v1/messages`: requests per minute, tokens per minute (input,
 * cache writes and output; cache reads are free, as at the provider) and a monthly spend cap
 * in USD cents. Keys without limits cost nothing here: no counter, no await.
 */
export class Admission {
  readonly #deps: AdmissionDeps;
  /** Keys with a token or spend limit, as last admitted: recorded calls are charged to them. */
  readonly #tracked = new Map<string, { tpm: number | null; capCents: number | null }>();

  constructor(deps: AdmissionDeps) {
    this.#deps = deps;
  }

  admit(principal: Principal, call: AdmittedCall): void | Promise<void> {
    const { limitRpm: rpm, limitTpm: tpm, limitMonthlySpendCents: cap } = principal.key;
    if (call.endpoint !== 'messages') return;
    // Limits can be removed while the key is in use: stop charging it as soon as they are.
    if (tpm != null || cap != null) this.#tracked.set(principal.key.id, { tpm, capCents: cap });
    else if (this.#tracked.size > 0) this.#tracked.delete(principal.key.id);
    if (rpm == null && tpm == null && cap == null) return;
    return this.#check(principal.key.id, rpm, tpm, cap, call);
  }

  async #check(keyId: string, rpm: number | null, tpm: number | null, capCents: number | null, call: AdmittedCall): Promise<void> {
    const now = this.#deps.clock();
    if (capCents != null) {
      const month = monthOf(now);
      let spentMicroUsd = 0;
      try {
        spentMicroUsd = await this.#deps.spend.spent(keyId, month, () => this.#seed(keyId, month));
      } catch (error) {
        // A refusal by the ledger itself (its store is down, limits fail closed) stands.
        if (error instanceof GatewayError) throw error;
        this.#deps.logger.warn('spend seed failed; spend cap not enforced for this call', { keyId, requestId: call.requestId, error });
      }
      if (spentMicroUsd >= capCents * 10_000) {
        throw new GatewayError(
          'rate_limit_error',
          `This key reached its monthly spend cap of $${(capCents / 100).toFixed(2)}. It resets at the start of next month (UTC); an account admin can raise the cap.`,
          // Retrying cannot help before the month ends: tell the SDKs not to.
          { headers: { 'x-should-retry': 'false' } },
        );
      }
    }
    if (tpm != null) {
      const r = await this.#deps.buckets.take(tokenBucket(keyId, tpm), 0, 1, now);
      if (!r.ok) throw limited('tokens', tpm, r, now, `This key's rate limit of ${tpm} tokens per minute is exceeded.`);
    }
    if (rpm != null) {
      const r = await this.#deps.buckets.take(requestBucket(keyId, rpm), 1, 1, now);
      if (!r.ok) throw limited('requests', rpm, r, now, `This key's rate limit of ${rpm} requests per minute is exceeded.`);
    }
  }

  async #seed(keyId: string, month: string): Promise<number> {
    const rows = await this.#deps.store.usage.keyUsageByModel(keyId, new Date(`${month}-01T00:00:00Z`));
    return rows.reduce((sum, row) => sum + usageCostCents(row.model, rowCounts(row)) * 10_000, 0);
  }

  // Charges happen after the answer: a failure must not become an unhandled rejection.
  readonly #chargeFailed = (error: unknown): void => this.#deps.logger.warn('charging a call to its limits failed', { error });

  /** Charges a recorded call to its key's token bucket and month-to-date spend. */
  observe(record: CallRecord): void {
    const tracked = record.keyId ? this.#tracked.get(record.keyId) : undefined;
    if (!tracked || !record.keyId || !record.usage) return;
    const u = usageFigures(record.usage);
    const now = this.#deps.clock();
    if (tracked.tpm != null) {
      const tokens = u.inputTokens + u.cacheCreationInputTokens + u.outputTokens;
      if (tokens > 0) Promise.resolve(this.#deps.buckets.take(tokenBucket(record.keyId, tracked.tpm), tokens, -Infinity, now)).catch(this.#chargeFailed);
    }
    if (tracked.capCents != null) {
      const cents = usageCostCents(record.model, figureCounts(u));
      Promise.resolve(this.#deps.spend.add(record.keyId, monthOf(record.createdAt.getTime()), cents * 10_000)).catch(this.#chargeFailed);
    }
  }
}

const requestBucket = (keyId: string, rpm: number): BucketSpec => ({ key: `rpm:${keyId}`, capacity: rpm, periodMs: MINUTE });
const tokenBucket = (keyId: string, tpm: number): BucketSpec => ({ key: `tpm:${keyId}`, capacity: tpm, periodMs: MINUTE });

/** 429 with `retry-after` and the provider's rate-limit headers for the exhausted limit. */
function limited(kind: 'requests' | 'tokens', limit: number, r: TakeResult, now: number, message: string): GatewayError {
  const retryAfter = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
  return new GatewayError('rate_limit_error', `${message} Retry after ${retryAfter} s.`, {
    headers: {
      'retry-after': String(retryAfter),
      [`anthropic-ratelimit-${kind}-limit`]: String(limit),
      [`anthropic-ratelimit-${kind}-remaining`]: String(Math.max(0, Math.floor(r.remaining))),
      [`anthropic-ratelimit-${kind}-reset`]: new Date(now + r.resetMs).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    },
  });
}
