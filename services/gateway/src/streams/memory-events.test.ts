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

const KEY_A = { accountId: 'acct_1', keyId: 'key_a', memberId: null };
const KEY_B = { accountId: 'acct_1', keyId: 'key_b', memberId: null };
const OTHER = { accountId: 'acct_2', keyId: 'key_c', memberId: null };
const THIRD = { accountId: 'acct_3', keyId: 'key_d', memberId: null };
const frame = (n: number) => 'x'.repeat(n);

const caps = { perKey: 300, perAccount: 500, total: 700 };
const open = () => new MemoryStreamEvents({ ttlMs: 60_000, maxBytes: 1_000, caps });

describe('kept streams: caps per key, per account and in all', () => {
  it("past the key's cap the key's oldest abandoned stream goes first; newer ones still resume", async () => {
    const events = open();
    const streams = ['req_1', 'req_2', 'req_3', 'req_4'].map((id) => {
      const s = events.open(id, KEY_A);
      s.add(frame(100));
      s.clientLeft();
      return s;
    });
    // 400 bytes for a 300-byte cap: the first (oldest, abandoned) is gone, the rest stay.
    expect(events.bytes).toBe(300);
    expect(await events.owner('req_1')).toBeNull();
    for (const id of ['req_2', 'req_3', 'req_4']) expect(await events.owner(id)).toEqual(KEY_A);
    streams[3]!.end();
    expect(await drain(events.follow('req_4', 0, new AbortController().signal))).toEqual({
      seqs: [1],
      end: 'done',
    });
    await events.close();
  });

  it('a stream whose client is connected, or that a resume is reading, is not abandoned', async () => {
    const events = open();
    const live = events.open('req_live', KEY_A);
    live.add(frame(100));
    const read = events.open('req_read', KEY_A);
    read.add(frame(100));
    read.clientLeft();
    const reader = new AbortController();
    const following = drain(events.follow('req_read', 0, reader.signal));
    const left = events.open('req_left', KEY_A);
    left.add(frame(50));
    left.clientLeft();
    const next = events.open('req_next', KEY_A);
    next.add(frame(100));
    // 350 > 300: the only abandoned stream (req_left) goes, though req_live is older.
    expect(await events.owner('req_left')).toBeNull();
    expect(await events.owner('req_live')).toEqual(KEY_A);
    expect(await events.owner('req_read')).toEqual(KEY_A);
    expect(events.bytes).toBe(300);
    reader.abort();
    await following;
    await events.close();
  });

  it('when live streams alone fill the cap, the one growing past it stops being kept; the others stay', async () => {
    const events = open();
    const first = events.open('req_1', KEY_A);
    first.add(frame(150));
    const second = events.open('req_2', KEY_A);
    second.add(frame(100));
    second.add(frame(100));
    expect(await events.owner('req_2')).toBeNull();
    expect(await events.owner('req_1')).toEqual(KEY_A);
    expect(events.bytes).toBe(150);
    // It is no longer kept: what it adds later is not counted either.
    second.add(frame(10));
    expect(events.bytes).toBe(150);
    await events.close();
  });

  it("another key's streams go for the account's cap, any account's for the total", async () => {
    const events = open();
    const b = events.open('req_b', KEY_B);
    b.add(frame(250));
    b.end();
    const a = events.open('req_a', KEY_A);
    a.add(frame(200));
    a.add(frame(100));
    // 550 > 500 for the account: key_b's ended stream goes, key_a's live one stays.
    expect(await events.owner('req_b')).toBeNull();
    expect(events.bytes).toBe(300);
    a.end();
    events.open('req_c', OTHER).add(frame(250));
    events.open('req_d', THIRD).add(frame(200));
    // 750 > 700 in all: the oldest abandoned of any account (req_a, ended) goes.
    expect(await events.owner('req_a')).toBeNull();
    expect(await events.owner('req_c')).toEqual(OTHER);
    expect(await events.owner('req_d')).toEqual(THIRD);
    expect(events.bytes).toBe(450);
    await events.close();
  });

  it('a stream dropped while it runs keeps nothing, not even its end', async () => {
    const events = open();
    const old = events.open('req_old', KEY_A);
    old.add(frame(200));
    old.clientLeft();
    events.open('req_new', KEY_A).add(frame(200));
    expect(await events.owner('req_old')).toBeNull();
    old.add(frame(10));
    old.end();
    expect(await events.owner('req_old')).toBeNull();
    expect(events.bytes).toBe(200);
    await events.close();
  });

  it('an expired stream counts no more', async () => {
    let now = 0;
    const events = new MemoryStreamEvents({ ttlMs: 1_000, maxBytes: 1_000, caps }, () => now);
    const s = events.open('req_1', KEY_A);
    s.add(frame(200));
    s.end();
    now = 2_000;
    expect(await events.owner('req_1')).toBeNull();
    expect(events.bytes).toBe(0);
    await events.close();
  });
});
