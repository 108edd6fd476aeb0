import { BudgetBook } from '../budgets/book';
import { BudgetGuard, type Crossing } from '../budgets/guard';
import type { Logger } from '../lib/logger';
import type { Store } from '../store';
import { Admission } from './admission';
import { MemoryBuckets } from './buckets';
import type { OnRedisDown } from './redis';
import { MemorySpendLedger, type SpendLedger } from '../budgets/spend';

export { Admission } from './admission';
export type { OnRedisDown } from './redis';

/** What metrics show about the limits in force. */
export interface LimitsStatus {
  backend: 'redis' | 'memory';
  onRedisDown: OnRedisDown;
  redisDown: boolean;
}

export interface Limits {
  admission: Admission;
  /** Each account's budgets in memory; `budgets:<account>` invalidations go to its `apply`. */
  budgets: BudgetBook;
  /** `redis` when instances share counters, `memory` when each keeps its own. */
  shared: 'redis' | 'memory';
  status(): LimitsStatus;
  close(): Promise<void>;
}

export interface LimitsOptions {
  redisUrl: string | null;
  /** While Redis is unreachable: count in this process (`open`, the default) or refuse (`closed`). */
  onRedisDown?: OnRedisDown;
  store: Pick<Store, 'budgets'>;
  clock: () => number;
  logger: Logger;
  /** How long an account's budgets are trusted without hearing of a change. */
  budgetTtlMs?: number;
  onCrossing?(c: Crossing): void;
}

/** Per-key rate limits and budgets, with counters in Redis (REDIS_URL, shared by instances) or in this process. */
export async function createLimits(opts: LimitsOptions): Promise<Limits> {
  const { store, clock, logger } = opts;
  const onRedisDown = opts.onRedisDown ?? 'open';
  const book = new BudgetBook((accountId) => store.budgets.ofAccount(accountId), {
    ttlMs: opts.budgetTtlMs ?? 30_000,
    clock,
  });
  const guard = (ledger: SpendLedger) =>
    new BudgetGuard({
      ledger,
      book,
      usage: (b, from, to) => store.budgets.spendByModel(b.accountId, b.scope, b.targetId, from, to),
      clock,
      logger,
      ...(opts.onCrossing ? { onCrossing: opts.onCrossing } : {}),
    });
  if (opts.redisUrl) {
    const { connectRedisLimits } = await import('./redis');
    const redis = await connectRedisLimits(opts.redisUrl, { logger, onDown: onRedisDown });
    const admission = new Admission({ buckets: redis.buckets, budgets: guard(redis.spend), clock, logger });
    return {
      admission,
      budgets: book,
      shared: 'redis',
      status: () => ({ backend: 'redis', onRedisDown, redisDown: redis.down }),
      close: () => redis.close(),
    };
  }
  const admission = new Admission({
    buckets: new MemoryBuckets(),
    budgets: guard(new MemorySpendLedger()),
    clock,
    logger,
  });
  return {
    admission,
    budgets: book,
    shared: 'memory',
    status: () => ({ backend: 'memory', onRedisDown, redisDown: false }),
    close: async () => {},
  };
}
