import { describe, expect, it } from 'vitest';
import { forcedSplit, PromptCache } from './cache';
import { measure } from './tokens';
import type { MessagesBody } from './types';

const long = (c: string) => c.repeat(4_000);
const cc = (ttl?: '5m' | '1h') => ({ type: 'ephemeral' as const, ...(ttl && { ttl }) });

function request(question: string, ttl?: '5m' | '1h', model = 'claude-sonnet-4-5'): MessagesBody {
  return {
    model,
    max_tokens: 100,
    system: [{ type: 'text', text: long('s'), cache_control: cc(ttl) }],
    messages: [{ role: 'user', content: question }],
  };
}

function setup(start = 0) {
  let now = start;
  const cache = new PromptCache(() => now);
  const split = (body: MessagesBody) => {
    const m = measure(body);
    const s = cache.split(body, m);
    expect(s.input + s.creation5m + s.creation1h + s.read).toBe(m.total);
    return s;
  };
  return { cache, split, advance: (ms: number) => (now += ms) };
}

describe('prompt cache', () => {
  it('writes a prefix on first sight and reads it afterwards', () => {
    const { split } = setup();
    expect(split(request('first?'))).toEqual({ input: 12, creation5m: 1_000, creation1h: 0, read: 0 });
    expect(split(request('second question'))).toEqual({
      input: 14,
      creation5m: 0,
      creation1h: 0,
      read: 1_000,
    });
  });

  it('splits writes by TTL and keys on the model', () => {
    const { split } = setup();
    expect(split(request('q', '1h')).creation1h).toBe(1_000);
    expect(split(request('q', '1h', 'claude-haiku-4-5')).creation1h).toBe(1_000);
    expect(split(request('q', '1h')).read).toBe(1_000);
  });

  it('expires entries after their TTL on the injected clock, and a read refreshes it', () => {
    const { split, advance } = setup();
    split(request('q'));
    advance(4 * 60_000);
    expect(split(request('q')).read).toBe(1_000);
    advance(4 * 60_000); // 8 minutes after the write, 4 after the refreshing read
    expect(split(request('q')).read).toBe(1_000);
    advance(5 * 60_000 + 1);
    expect(split(request('q')).creation5m).toBe(1_000);
  });

  it('a 1h entry outlives 5 minutes', () => {
    const { split, advance } = setup();
    split(request('q', '1h'));
    advance(59 * 60_000);
    expect(split(request('q', '1h')).read).toBe(1_000);
  });

  it('reads the longest cached prefix and writes only the extension', () => {
    const { split } = setup();
    const first: MessagesBody = {
      ...request('q'),
      messages: [{ role: 'user', content: [{ type: 'text', text: long('a'), cache_control: cc() }] }],
    };
    split(first);
    const second: MessagesBody = {
      ...first,
      messages: [
        ...first.messages,
        { role: 'assistant', content: 'ok' },
        {
          role: 'user',
          content: [
            { type: 'text', text: long('b'), cache_control: cc('1h') },
            { type: 'text', text: 'tail' },
          ],
        },
      ],
    };
    const s = split(second);
    expect(s.read).toBe(measure(first).total);
    expect(s.creation1h).toBeGreaterThan(1_000);
    expect(s.creation5m).toBe(0);
    expect(s.input).toBe(1); // 'tail' = 4 bytes
  });

  it('clear() forgets everything', () => {
    const { cache, split } = setup();
    split(request('q'));
    expect(cache.size).toBe(1);
    cache.clear();
    expect(split(request('q')).read).toBe(0);
  });

  it('forced scenarios put a fixed share of the input in one bucket', () => {
    expect(forcedSplit(100, 'cache_read')).toEqual({ input: 25, creation5m: 0, creation1h: 0, read: 75 });
    expect(forcedSplit(101, 'cache_write_1h')).toEqual({ input: 26, creation5m: 0, creation1h: 75, read: 0 });
  });
});
