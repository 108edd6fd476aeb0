import { Redis } from 'ioredis';
import type { Logger } from '../lib/logger';
import type { Held, KeptBudget } from './budget';
import {
  KeptStream,
  keptBudget,
  type KeptEvent,
  type KeptStreamOptions,
  type StreamEnd,
  type StreamEvents,
  type StreamOwner,
} from './events';

const PREFIX = 'keygate:stream:';
// A blocked read wakes this often to see whether the reader left or the stream expired.
const BLOCK_MS = 2_000;

/**
 * Kept events in Redis Streams, so a client resumes on any instance. One stream per call:
 * entry `0-<seq>` holds an event's frame, the entry after the last holds how it ended. The
 * owner sits beside it. Both expire `ttlMs` after the end (or after the last event). Writes
 * are pipelined (ioredis auto-pipelining): the call path never waits for Redis. The caps on
 * kept bytes (KeptBudget) count what this instance wrote: with N instances Redis holds at most N
 * times them, and a stream read only by a resume on another instance counts as abandoned here.
 */
export class RedisStreamEvents implements StreamEvents {
  readonly #redis: Redis;
  readonly #opts: KeptStreamOptions;
  readonly #logger: Logger;
  readonly #budget: KeptBudget;

  constructor(url: string, opts: KeptStreamOptions, logger: Logger) {
    this.#redis = new Redis(url, { enableAutoPipelining: true, maxRetriesPerRequest: 1, lazyConnect: false });
    // ioredis reports every failed reconnection here; without a listener they would end the process.
    this.#redis.on('error', (error) => logger.debug('stream events: redis error', { error }));
    this.#opts = opts;
    this.#logger = logger;
    this.#budget = keptBudget(opts);
  }

  open(callId: string, owner: StreamOwner): KeptStream {
    this.#redis
      .set(`${PREFIX}${callId}:owner`, JSON.stringify(owner), 'PX', this.#opts.ttlMs)
      .catch(this.#failed);
    const key = PREFIX + callId;
    const held = this.#budget.hold(callId, owner, () => {
      this.#redis.del(key, `${key}:owner`).catch(this.#failed);
    });
    return new RedisKeptStream(this.#redis, key, this.#opts, this.#budget, held, this.#failed);
  }

  async owner(callId: string): Promise<StreamOwner | null> {
    const raw = await this.#redis.get(`${PREFIX}${callId}:owner`);
    return raw === null ? null : (JSON.parse(raw) as StreamOwner);
  }

  async *follow(
    callId: string,
    after: number,
    signal: AbortSignal,
  ): AsyncGenerator<KeptEvent, StreamEnd | null> {
    const key = PREFIX + callId;
    // A blocking read holds its connection: each follower gets its own.
    const reader = this.#redis.duplicate({ enableAutoPipelining: false });
    reader.on('error', () => {});
    const leave = () => reader.disconnect();
    signal.addEventListener('abort', leave, { once: true });
    const reading = this.#budget.reading(callId);
    if (reading) reading.readers++;
    try {
      let last = `0-${after}`;
      for (;;) {
        if (signal.aborted) return null;
        const answer = (await reader
          .xread('COUNT', 512, 'BLOCK', BLOCK_MS, 'STREAMS', key, last)
          .catch((err: Error) => {
            if (signal.aborted) return null;
            throw err;
          })) as [string, [string, string[]][]][] | null;
        if (signal.aborted) return null;
        if (answer === null) {
          if ((await this.#redis.exists(`${PREFIX}${callId}:owner`)) === 0) return null;
          continue;
        }
        for (const [id, fields] of answer[0]![1]) {
          last = id;
          if (fields[0] === 'end') return fields[1] as StreamEnd;
          yield { seq: Number(id.slice(2)), frame: fields[1]! };
        }
      }
    } finally {
      if (reading) reading.readers--;
      signal.removeEventListener('abort', leave);
      reader.disconnect();
    }
  }

  async close(): Promise<void> {
    this.#budget.clear();
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }

  readonly #failed = (error: unknown): void => {
    this.#logger.warn('stream events: a write to redis failed; the stream may not be resumable', { error });
  };
}

class RedisKeptStream extends KeptStream {
  readonly #redis: Redis;
  readonly #key: string;
  readonly #ttlMs: number;
  readonly #failed: (error: unknown) => void;

  constructor(
    redis: Redis,
    key: string,
    opts: KeptStreamOptions,
    budget: KeptBudget,
    held: Held,
    failed: (error: unknown) => void,
  ) {
    super(opts, budget, held);
    this.#redis = redis;
    this.#key = key;
    this.#ttlMs = opts.ttlMs;
    this.#failed = failed;
  }

  protected keep(seq: number, frame: string): void {
    this.#redis.xadd(this.#key, `0-${seq}`, 'f', frame).catch(this.#failed);
    // The time counts from the last event: a stream longer than the TTL stays kept while it runs.
    if (seq % 256 === 1) {
      this.#redis.pexpire(this.#key, this.#ttlMs).catch(this.#failed);
      this.#redis.pexpire(`${this.#key}:owner`, this.#ttlMs).catch(this.#failed);
    }
  }

  protected finish(seq: number, how: StreamEnd): void {
    this.#redis.xadd(this.#key, `0-${seq}`, 'end', how).catch(this.#failed);
    this.#redis.pexpire(this.#key, this.#ttlMs).catch(this.#failed);
    this.#redis.pexpire(`${this.#key}:owner`, this.#ttlMs).catch(this.#failed);
  }
}
