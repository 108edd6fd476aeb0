import { describe, expect, it } from 'vitest';
import type { KeptEvent, StreamEnd } from './events';
import { MemoryStreamEvents } from './memory-events';

const OWNER = { accountId: 'acct_1', keyId: 'key_1', memberId: null };

async function drain(gen: AsyncGenerator<KeptEvent, StreamEnd | null>) {
  const seqs: number[] = [];
  let step = await gen.next();
  while (!step.done) {
    seqs.push(step.value.seq);
    step = await gen.next();
  }
  return { seqs, end: step.value };
}

describe('MemoryStreamEvents', () => {
  it('replays after the given event, then follows live events to the end', async () => {
    const events = new MemoryStreamEvents({ ttlMs: 60_000, maxBytes: 1_000 });
    const kept = events.open('req_1', OWNER);
    kept.add('a');
    kept.add('b');
    const followed = drain(events.follow('req_1', 1, new AbortController().signal));
    kept.add('c');
    kept.end();
    expect(await followed).toEqual({ seqs: [2, 3], end: 'done' });
    expect(await events.owner('req_1')).toEqual(OWNER);
    await events.close();
  });

  it('stops keeping past the byte bound and says so; expires a finished stream after the TTL', async () => {
    let now = 0;
    const events = new MemoryStreamEvents({ ttlMs: 1_000, maxBytes: 5 }, () => now);
    const kept = events.open('req_2', OWNER);
    kept.add('abc');
    kept.add('defg');
    kept.add('h');
    expect(await drain(events.follow('req_2', 0, new AbortController().signal))).toEqual({
      seqs: [1],
      end: 'truncated',
    });
    now = 1_001;
    expect(await events.owner('req_2')).toBeNull();
    expect(await drain(events.follow('req_2', 0, new AbortController().signal))).toEqual({
      seqs: [],
      end: null,
    });
    await events.close();
  });

  it('a reader that leaves stops waiting', async () => {
    const events = new MemoryStreamEvents({ ttlMs: 60_000, maxBytes: 1_000 });
    events.open('req_3', OWNER).add('a');
    const left = new AbortController();
    const followed = drain(events.follow('req_3', 0, left.signal));
    left.abort();
    expect(await followed).toEqual({ seqs: [1], end: null });
    await events.close();
  });
});
