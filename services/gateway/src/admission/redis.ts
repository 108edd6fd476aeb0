import { Redis } from 'ioredis';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import { MemoryBuckets, type BucketSpec, type Buckets, type TakeResult } from './buckets';
import { HELD, MemorySpendLedger, type SpendLedger } from '../budgets/spend';

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
  tokens = math.min(capacity, math.max(tokens - cost, -capacity))
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

// Holds `ARGV[3 + 2i]` micro-USD on every counter i (KEYS[2i-1], its holds in the hash
// KEYS[2i]) for call ARGV[1], if each stays within its limit ARGV[4 + 2i] with what is spent
// and held: all or none. A hold is "micro:until"; lapsed ones are dropped on the way.
const RESERVE = `
local id = ARGV[1]
local now = tonumber(ARGV[2])
local untilAt = ARGV[3]
local n = #KEYS / 2
for i = 1, n do
  local spent = redis.call('GET', KEYS[2 * i - 1])
  if not spent then return {i - 1, '0', 1} end
  local held = 0
  local all = redis.call('HGETALL', KEYS[2 * i])
  for j = 1, #all, 2 do
    local sep = string.find(all[j + 1], ':', 1, true)
    if tonumber(string.sub(all[j + 1], sep + 1)) <= now then redis.call('HDEL', KEYS[2 * i], all[j])
    else held = held + tonumber(string.sub(all[j + 1], 1, sep - 1)) end
  end
  local left = tonumber(ARGV[3 + 2 * i]) - tonumber(spent) - held
  if tonumber(ARGV[2 + 2 * i]) > left then return {i - 1, tostring(math.max(0, left)), 0} end
end
for i = 1, n do
  redis.call('HSET', KEYS[2 * i], id, ARGV[2 + 2 * i] .. ':' .. untilAt)
  -- Only ever later: a call's short hold must not take a message batch's long one with it.
  local ttl = redis.call('PTTL', KEYS[2 * i])
  if ttl < 0 or now + ttl < tonumber(untilAt) then redis.call('PEXPIREAT', KEYS[2 * i], untilAt) end
end
return {-1, '0', 0}
`;

// Drops call ARGV[1]'s hold on each counter and adds what it cost (ARGV[1 + i]) to counters
// already seeded; answers each counter's figure (false: not tracked).
const SETTLE = `
local out = {}
for i = 1, #KEYS / 2 do
  redis.call('HDEL', KEYS[2 * i], ARGV[1])
  local cost = tonumber(ARGV[1 + i])
  if redis.call('EXISTS', KEYS[2 * i - 1]) == 1 then
    out[i] = cost > 0 and redis.call('INCRBY', KEYS[2 * i - 1], cost) or tonumber(redis.call('GET', KEYS[2 * i - 1]))
  else out[i] = false end
end
return out
`;

// A counter outlives its period by a week, then expires (no sweep needed).
const SPEND_TTL_MARGIN_MS = 7 * 86_400_000;
// Lua cannot take -Infinity as an argument; this is far below any bucket.
const NO_MINIMUM = -1e15;

export type OnRedisDown = 'open' | 'closed';

export interface RedisLimits {
  buckets: Buckets;
  spend: SpendLedger;
  /** True while Redis cannot be reached (or its last command failed). */
  readonly down: boolean;
  close(): Promise<void>;
}

export interface RedisLimitsOptions {
  logger: Logger;
  /** While Redis is down: `open` admits and counts in this process, `closed` refuses with 429. */
  onDown?: OnRedisDown;
}

/**
 * Rate-limit buckets and budget spend counters in Redis, shared by every instance. A Redis
 * that is unreachable, at startup or later, never stops the gateway: the client keeps
 * reconnecting, each outage is logged once, and meanwhile limits fall back to counters in
 * this process (`open`), or (`closed`) refuse the calls that a rate limit or a hard-capped
 * budget (a key's spend cap among them) could refuse; soft budgets are counted here either way.
 */
export async function connectRedisLimits(url: string, opts: RedisLimitsOptions): Promise<RedisLimits> {
  const { logger } = opts;
  const closed = opts.onDown === 'closed';
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    commandTimeout: 500,
    connectTimeout: 2_000,
    // Commands fail at once while disconnected instead of waiting in a queue: a call is
    // decided by the fallback without delay.
    enableOfflineQueue: false,
    enableAutoPipelining: true,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  let outage: 'start' | 'later' | null = null;
  let starting = true;
  let closing = false;
  let failedCommand = false;
  const mode = closed
    ? 'refused with 429 (KEYGATE_LIMITS_ON_REDIS_DOWN=closed; soft budgets are counted in this instance)'
    : 'counted in this instance only (KEYGATE_LIMITS_ON_REDIS_DOWN=open)';
  const wentDown = (error: unknown) => {
    if (outage || starting || closing) return;
    outage = 'later';
    logger.warn(`redis unreachable: calls under rate limits and budgets are ${mode} until it answers`, {
      error,
    });
  };
  // ioredis reports every failed reconnection here; without a listener they would end the process.
  redis.on('error', wentDown);
  redis.on('close', () => wentDown(new Error('connection to Redis closed')));
  redis.on('ready', () => {
    failedCommand = false;
    if (outage) logger.info('redis reachable again: limits are shared through it');
    outage = null;
  });
  redis.defineCommand('kgTake', { numberOfKeys: 1, lua: TAKE });
  redis.defineCommand('kgAddIfSeeded', { numberOfKeys: 1, lua: ADD_IF_SEEDED });
  redis.defineCommand('kgReserve', { lua: RESERVE });
  redis.defineCommand('kgSettle', { lua: SETTLE });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    logger.warn(
      `redis unreachable at start (REDIS_URL); the gateway serves, and calls under rate limits and budgets are ${mode} until it answers`,
      { error },
    );
    outage = 'start';
  }
  starting = false;
  const call = redis as unknown as {
    kgTake(key: string, ...args: (string | number)[]): Promise<[number, string]>;
    kgAddIfSeeded(key: string, amount: number): Promise<number | null>;
    kgReserve(numberOfKeys: number, ...args: (string | number)[]): Promise<[number, string, number]>;
    kgSettle(numberOfKeys: number, ...args: (string | number)[]): Promise<(number | null)[]>;
  };
  const isDown = () => redis.status !== 'ready' || failedCommand;
  const local = { buckets: new MemoryBuckets(), spend: new MemorySpendLedger() };
  const localSpend = local.spend;
  const refusal = (what: string) =>
    new GatewayError(
      'rate_limit_error',
      `${what} cannot be checked: the gateway's limit store (Redis) is unreachable, and this gateway refuses such calls until it is back. Retry in a few seconds.`,
      { headers: { 'retry-after': '5' } },
    );
  /** What to do when Redis failed: `refuse` names a check that closed mode refuses, null for a charge. */
  const fallback = <T>(error: unknown, refuse: string | null, locally: () => T): T => {
    if (error !== null) {
      failedCommand = true;
      wentDown(error);
    }
    if (closed && refuse !== null) throw refusal(refuse);
    return locally();
  };
  const ok = <T>(value: T): T => {
    failedCommand = false;
    return value;
  };

  const buckets: Buckets = {
    async take(spec: BucketSpec, cost: number, minimum: number, now: number): Promise<TakeResult> {
      const refuse = minimum !== -Infinity ? "This key's rate limit" : null;
      if (redis.status !== 'ready')
        return fallback(null, refuse, () => local.buckets.take(spec, cost, minimum, now));
      const rate = spec.capacity / spec.periodMs;
      let reply: [number, string];
      try {
        const min = Number.isFinite(minimum) ? minimum : NO_MINIMUM;
        reply = ok(await call.kgTake(PREFIX + spec.key, spec.capacity, spec.periodMs, cost, min, now));
      } catch (error) {
        return fallback(error, refuse, () => local.buckets.take(spec, cost, minimum, now));
      }
      const [admitted, left] = reply;
      const tokens = Number(left);
      return {
        ok: admitted === 1,
        remaining: tokens,
        retryAfterMs: admitted === 1 ? 0 : (minimum - tokens) / rate,
        resetMs: (spec.capacity - tokens) / rate,
      };
    },
  };

  const spend: SpendLedger = {
    async spent(scopeId, period, seed, hardCap) {
      const key = `${PREFIX}spend:${scopeId}:${period.label}`;
      const refuse = hardCap ? 'A hard-capped budget of this call' : null;
      if (redis.status !== 'ready')
        return fallback(null, refuse, () => local.spend.spent(scopeId, period, seed));
      try {
        const current = ok(await redis.get(key));
        if (current !== null) return Number(current);
      } catch (error) {
        return fallback(error, refuse, () => local.spend.spent(scopeId, period, seed));
      }
      const seeded = Math.round(await seed());
      try {
        // Another instance may have seeded it meanwhile (and added to it): its figure wins.
        await redis.set(key, String(seeded), 'PX', period.end - period.start + SPEND_TTL_MARGIN_MS, 'NX');
        return Number(ok(await redis.get(key)) ?? seeded);
      } catch (error) {
        return fallback(error, null, () => seeded);
      }
    },
    async add(scopeId, label, microUsd) {
      // Counted here too, so the fallback's figures are current when Redis goes away.
      const here = local.spend.add(scopeId, label, microUsd);
      if (redis.status !== 'ready') return here;
      try {
        const total = ok(
          await call.kgAddIfSeeded(`${PREFIX}spend:${scopeId}:${label}`, Math.round(microUsd)),
        );
        return total === null ? null : Number(total);
      } catch (error) {
        return fallback(error, null, () => here);
      }
    },
    async reserve(holdId, items, until, now) {
      const refuse = 'A hard-capped budget of this call';
      // The local ledger holds too, so a fallback after an outage still sees calls in flight.
      const local = () => localSpend.reserve(holdId, items, until, now);
      if (redis.status !== 'ready') return fallback(null, refuse, local);
      const keys = items.flatMap((it) => spendKeys(it.scopeId, it.period.label));
      const args = items.flatMap((it) => [Math.round(it.microUsd), Math.floor(it.limitMicro)]);
      try {
        const [refused, left, unseeded] = ok(
          await call.kgReserve(keys.length, ...keys, holdId, now, until, ...args),
        );
        if (refused === -1) localSpend.reserve(holdId, items, until, now);
        return refused === -1 ? HELD : { refused, leftMicro: Number(left), unseeded: unseeded === 1 };
      } catch (error) {
        return fallback(error, refuse, local);
      }
    },
    async settle(holdId, items) {
      const here = localSpend.settle(holdId, items);
      if (redis.status !== 'ready') return here;
      const keys = items.flatMap((it) => spendKeys(it.scopeId, it.label));
      try {
        const totals = ok(
          await call.kgSettle(keys.length, ...keys, holdId, ...items.map((it) => Math.round(it.microUsd))),
        );
        return totals.map((t) => (t === null ? null : Number(t)));
      } catch (error) {
        return fallback(error, null, () => here);
      }
    },
  };

  return {
    buckets,
    spend,
    get down() {
      return isDown();
    },
    async close() {
      closing = true;
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

const spendKeys = (scopeId: string, label: string) => [
  `${PREFIX}spend:${scopeId}:${label}`,
  `${PREFIX}held:${scopeId}:${label}`,
];
