import { Redis } from 'ioredis';
import type { Logger } from '../lib/logger';
import type { BucketSpec, Buckets, TakeResult } from './buckets';
import type { SpendLedger } from './spend';

const PREFIX = 'keygate:';

// The same step as `step()` in buckets.ts, atomically in Redis so instances share buckets.
const TAKE = `
local capacity = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local minimum = tonumber(ARGV[4])
local now = tonumber(ARGV[5])
local rate = capacity / period
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
if now > at then tokens = math.min(capacity, tokens + (now - at) * rate) end
local ok = 0
if tokens >= minimum then
  ok = 1
  tokens = math.max(tokens - cost, -capacity)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(math.max(now, at)))
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / rate) + 1000)
return {ok, tostring(tokens)}
`;

// Adds only to a month already seeded: a figure started from 0 would hide the rollups.
const ADD_IF_SEEDED = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCRBY', KEYS[1], ARGV[1]) end
return false
`;

// A counter outlives its period by a week, then expires (no sweep needed).
const SPEND_TTL_MARGIN_MS = 7 * 86_400_000;
// Lua cannot take -Infinity as an argument; this is far below any bucket.
const NO_MINIMUM = -1e15;

export interface RedisLimits {
  buckets: Buckets;
  spend: SpendLedger;
  close(): Promise<void>;
}

/**
 * Rate-limit buckets and spend counters in Redis, shared by every instance. Connects (or
 * fails) at startup; later Redis errors fail open, logged, so an outage of the limiter
 * never takes the gateway down with it.
 */
export async function connectRedisLimits(url: string, logger: Logger): Promise<RedisLimits> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout: 500, enableAutoPipelining: true });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    throw new Error(`REDIS_URL: cannot connect (${(err as Error).message})`);
  }
  redis.defineCommand('kgTake', { numberOfKeys: 1, lua: TAKE });
  redis.defineCommand('kgAddIfSeeded', { numberOfKeys: 1, lua: ADD_IF_SEEDED });
  const call = redis as unknown as {
    kgTake(key: string, ...args: (string | number)[]): Promise<[number, string]>;
    kgAddIfSeeded(key: string, amount: number): Promise<number | null>;
  };
  let lastWarning = 0;
  const warn = (error: unknown) => {
    if (Date.now() - lastWarning < 10_000) return;
    lastWarning = Date.now();
    logger.warn('redis unavailable: rate limits, spend caps and budgets are not enforced meanwhile', { error });
  };

  const buckets: Buckets = {
    async take(spec: BucketSpec, cost: number, minimum: number, now: number): Promise<TakeResult> {
      const rate = spec.capacity / spec.periodMs;
      try {
        const min = Number.isFinite(minimum) ? minimum : NO_MINIMUM;
        const [ok, left] = await call.kgTake(PREFIX + spec.key, spec.capacity, spec.periodMs, cost, min, now);
        const tokens = Number(left);
        return { ok: ok === 1, remaining: tokens, retryAfterMs: ok === 1 ? 0 : (minimum - tokens) / rate, resetMs: (spec.capacity - tokens) / rate };
      } catch (error) {
        warn(error);
        return { ok: true, remaining: spec.capacity, retryAfterMs: 0, resetMs: 0 };
      }
    },
  };

  const spend: SpendLedger = {
    async spent(scopeId, period, seed) {
      const key = `${PREFIX}spend:${scopeId}:${period.label}`;
      try {
        const current = await redis.get(key);
        if (current !== null) return Number(current);
      } catch (error) {
        warn(error);
        return 0;
      }
      const seeded = Math.round(await seed());
      try {
        // Another instance may have seeded it meanwhile (and added to it): its figure wins.
        await redis.set(key, String(seeded), 'PX', period.end - period.start + SPEND_TTL_MARGIN_MS, 'NX');
        return Number((await redis.get(key)) ?? seeded);
      } catch (error) {
        warn(error);
        return seeded;
      }
    },
    async add(scopeId, label, microUsd) {
      try {
        const total = await call.kgAddIfSeeded(`${PREFIX}spend:${scopeId}:${label}`, Math.round(microUsd));
        return total === null ? null : Number(total);
      } catch (error) {
        warn(error);
        return null;
      }
    },
  };

  return {
    buckets,
    spend,
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
