import { BudgetBook } from '../budgets/book';
import { BudgetGuard, type Crossing } from '../budgets/guard';
import type { Logger } from '../lib/logger';
import type { Prices } from '../pricing/prices';
import type { SpendLimitRecord } from '../budgets/spend-limit-queries';
import type { ScopeRateLimitRecord } from '../budgets/rate-limit-queries';
import type { Store } from '../store';
import { Admission, type Standing } from './admission';
import { MemoryBuckets, type Buckets } from './buckets';
import { CallEstimates } from './estimate';
import { PostgresSpendLedger } from './postgres';
import { RateLimits } from './rates';
import { RateSubjects } from './subjects';
import type { OnRedisDown } from './redis';
import type { SpendLedger } from '../budgets/spend';

export { Admission, type Standing, type Verdict } from './admission';
export type { OnRedisDown } from './redis';

/** What metrics show about the limits in force. */
export interface LimitsStatus {
  backend: 'redis' | 'memory';
  onRedisDown: OnRedisDown;
  redisDown: boolean;
}

export interface Limits {
  admission: Admission;
  /** Each account's budgets, spend limits and rate limits in memory; `budgets:<account>` invalidations go to its `apply`. */
  budgets: { apply(payload: string): void };
  /** `redis` when instances share counters, `memory` when rate limits are counted per instance. */
  shared: 'redis' | 'memory';
  status(): LimitsStatus;
  close(): Promise<void>;
}

export interface LimitsOptions {
  redisUrl: string | null;
  /** While Redis is unreachable: count in this process (`open`, the default) or refuse (`closed`). */
  onRedisDown?: OnRedisDown;
  store: Pick<Store, 'budgets' | 'spend' | 'spendLimits' | 'rateLimits'>;
  /** The account's billing standing, checked first (null: not checked, as in the CLI). */
  standing?: Standing | null;
  /** The gateway's prices, which reservations and budgets cost calls with. */
  prices: Prices;
  clock: () => number;
  logger: Logger;
  /** How long an account's budgets are trusted without hearing of a change. */
  budgetTtlMs?: number;
  /** The longest a call can hold its ceiling (a crashed instance's holds lapse after it). */
  holdMs?: number;
  onCrossing?(c: Crossing): void;
}

/**
 * Admission with its counters: in Redis (REDIS_URL, shared by instances); without it, rate
 * limits in this process and hard spend caps in PostgreSQL (shared, a round trip only for
 * calls under a hard cap).
 */
export async function createLimits(opts: LimitsOptions): Promise<Limits> {
  const { store, clock, logger } = opts;
  const onRedisDown = opts.onRedisDown ?? 'open';
  const book = new BudgetBook((accountId) => store.budgets.ofAccount(accountId), {
    ttlMs: opts.budgetTtlMs ?? 30_000,
    clock,
  });
  const spendLimits = new BudgetBook<SpendLimitRecord>(
    (accountId) => store.spendLimits.ofAccount(accountId),
    {
      ttlMs: opts.budgetTtlMs ?? 30_000,
      clock,
    },
  );
  // Members', groups' and the account's rate limits: one read per account, again after a change.
  const rateLimits = new BudgetBook<ScopeRateLimitRecord>(
    (accountId) => store.rateLimits.ofAccount(accountId),
    {
      ttlMs: opts.budgetTtlMs ?? 30_000,
      clock,
    },
  );
  const subjects = new RateSubjects(rateLimits);
  const books = {
    apply(payload: string) {
      book.apply(payload);
      spendLimits.apply(payload);
      rateLimits.apply(payload);
    },
  };
  const guard = (ledger: SpendLedger) =>
    new BudgetGuard({
      ledger,
      book,
      spendLimits,
      prices: opts.prices,
      usage: (b, from, to) => store.budgets.spendByModel(b.accountId, b.scope, b.targetId, from, to),
      clock,
      logger,
      ...(opts.onCrossing ? { onCrossing: opts.onCrossing } : {}),
    });
  const admission = (buckets: Buckets, ledger: SpendLedger) =>
    new Admission({
      standing: opts.standing ?? null,
      rates: new RateLimits(buckets, clock, logger),
      subjects,
      estimates: new CallEstimates(),
      budgets: guard(ledger),
      prices: opts.prices,
      clock,
      logger,
      holdMs: opts.holdMs ?? 15 * 60_000,
    });
  if (opts.redisUrl) {
    const { connectRedisLimits } = await import('./redis');
    const redis = await connectRedisLimits(opts.redisUrl, { logger, onDown: onRedisDown });
    return {
      admission: admission(redis.buckets, redis.spend),
      budgets: books,
      shared: 'redis',
      status: () => ({ backend: 'redis', onRedisDown, redisDown: redis.down }),
      close: () => redis.close(),
    };
  }
  const sweep = setInterval(() => {
    store.spend.sweep(new Date(clock())).catch((error) => logger.warn('spend hold sweep failed', { error }));
  }, 3_600_000);
  sweep.unref();
  return {
    admission: admission(new MemoryBuckets(), new PostgresSpendLedger(store.spend)),
    budgets: books,
    shared: 'memory',
    status: () => ({ backend: 'memory', onRedisDown, redisDown: false }),
    close: async () => clearInterval(sweep),
  };
}
