import type { Logger } from '../lib/logger';
import type { Store } from '../store';
import { Admission } from './admission';
import { MemoryBuckets } from './buckets';
import { connectRedisLimits, type OnRedisDown } from './redis';
import { MemorySpendLedger } from './spend';

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
  /** `redis` when instances share counters, `memory` when each keeps its own. */
  shared: 'redis' | 'memory';
  status(): LimitsStatus;
  close(): Promise<void>;
}

/** Per-key limits with counters in Redis (REDIS_URL, shared by instances) or in this process. */
export async function createLimits(opts: {
  redisUrl: string | null;
  onRedisDown?: OnRedisDown;
  store: Pick<Store, 'usage'>;
  clock: () => number;
  logger: Logger;
}): Promise<Limits> {
  const common = { store: opts.store, clock: opts.clock, logger: opts.logger };
  const onRedisDown = opts.onRedisDown ?? 'open';
  if (opts.redisUrl) {
    const redis = await connectRedisLimits(opts.redisUrl, { logger: opts.logger, onDown: onRedisDown });
    return {
      admission: new Admission({ ...common, buckets: redis.buckets, spend: redis.spend }),
      shared: 'redis',
      status: () => ({ backend: 'redis', onRedisDown, redisDown: redis.down }),
      close: () => redis.close(),
    };
  }
  return {
    admission: new Admission({ ...common, buckets: new MemoryBuckets(), spend: new MemorySpendLedger() }),
    shared: 'memory',
    status: () => ({ backend: 'memory', onRedisDown, redisDown: false }),
    close: async () => {},
  };
}
