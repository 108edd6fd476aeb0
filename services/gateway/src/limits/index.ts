import type { Logger } from '../lib/logger';
import type { Store } from '../store';
import { Admission } from './admission';
import { MemoryBuckets } from './buckets';
import { connectRedisLimits } from './redis';
import { MemorySpendLedger } from './spend';

export { Admission } from './admission';

export interface Limits {
  admission: Admission;
  /** `redis` when instances share counters, `memory` when each keeps its own. */
  shared: 'redis' | 'memory';
  close(): Promise<void>;
}

/** Per-key limits with counters in Redis (REDIS_URL, shared by instances) or in this process. */
export async function createLimits(opts: { redisUrl: string | null; store: Pick<Store, 'usage'>; clock: () => number; logger: Logger }): Promise<Limits> {
  const common = { store: opts.store, clock: opts.clock, logger: opts.logger };
  if (opts.redisUrl) {
    const redis = await connectRedisLimits(opts.redisUrl, opts.logger);
    return { admission: new Admission({ ...common, buckets: redis.buckets, spend: redis.spend }), shared: 'redis', close: () => redis.close() };
  }
  return { admission: new Admission({ ...common, buckets: new MemoryBuckets(), spend: new MemorySpendLedger() }), shared: 'memory', close: async () => {} };
}
