import type { Logger } from '../lib/logger';
import type { KeptStreamOptions, StreamEvents } from './events';
import { MemoryStreamEvents } from './memory-events';
import { RedisStreamEvents } from './redis-events';

/** Kept events in Redis when the instances share one (resume on any instance), else in this process. */
export function openStreamEvents(
  config: { redisUrl: string | null; resumable: KeptStreamOptions },
  logger: Logger,
): StreamEvents {
  return config.redisUrl
    ? new RedisStreamEvents(config.redisUrl, config.resumable, logger)
    : new MemoryStreamEvents(config.resumable);
}
