import { describe, expect, it } from 'vitest';
import { growthFor, Lane, rng, toolOutput } from './team-session';

const lane = (o: Partial<ConstructorParameters<typeof Lane>[0]> = {}) =>
  new Lane({
    model: 'claude-opus-5-5',
    maxTokens: 128_000,
    growth: 1.11,
    finalBytes: 150 * 1024,
    tag: 't-m0-l0',
    ...o,
  });

type Block = { cache_control?: unknown; content?: unknown };
type Body = {
  system: Block[];
  tools: unknown[];
  messages: { role: string; content: Block[] }[];
  stream: boolean;
  max_tokens: number;
};
const marks = (b: Body) => b.messages.flatMap((m, i) => (m.content.some((c) => c.cache_control) ? [i] : []));

describe('a Claude Code session lane', () => {
  it('starts at about 20 KB with 12 tools and three system blocks, two of them cache breakpoints', () => {
    const body = lane().next();
    const b = JSON.parse(body) as Body;
    expect(Buffer.byteLength(body)).toBeGreaterThan(17_000);
    expect(Buffer.byteLength(body)).toBeLessThan(24_000);
    expect(b.tools).toHaveLength(12);
    expect(b.system.map((s) => Boolean(s.cache_control))).toEqual([false, true, true]);
    expect(b).toMatchObject({ stream: true, max_tokens: 128_000 });
    expect(marks(b)).toEqual([0]);
  });

  it('grows each call by its factor, the previous body a prefix of the next, the last two user turns marked', () => {
    const l = lane();
    let prev = l.next();
    for (let i = 0; i < 10; i++) {
      const next = l.next();
      const ratio = Buffer.byteLength(next) / Buffer.byteLength(prev);
      expect(ratio).toBeGreaterThan(1.09);
      expect(ratio).toBeLessThan(1.13);
      const [a, b] = [JSON.parse(prev) as Body, JSON.parse(next) as Body];
      // The history is kept: every earlier message, cache_control aside, comes back unchanged.
      const plain = (m: unknown) => JSON.stringify(m).replaceAll(',"cache_control":{"type":"ephemeral"}', '');
      expect(b.messages.slice(0, a.messages.length).map(plain)).toEqual(a.messages.map(plain));
      expect(b.messages).toHaveLength(a.messages.length + 2);
      expect(marks(b)).toEqual([b.messages.length - 3, b.messages.length - 1]);
      prev = next;
    }
  });

  it('ends a session at its final size and begins another, small again and with a prefix of its own', () => {
    const l = lane({ finalBytes: 60 * 1024 });
    const sizes: number[] = [];
    while (l.session === 1) sizes.push(Buffer.byteLength(l.next()));
    const restart = sizes.pop()!;
    expect(Math.max(...sizes)).toBeGreaterThanOrEqual(60 * 1024);
    expect(Math.max(...sizes)).toBeLessThan(60 * 1024 * 1.13);
    expect(restart).toBeLessThan(24_000);
    expect(l.session).toBe(2);
  });

  it('is the same for the same options, and different lanes have different prefixes', () => {
    const [a, b, c] = [lane(), lane(), lane({ tag: 't-m0-l1' })];
    for (let i = 0; i < 5; i++) {
      const [x, y, z] = [a.next(), b.next(), c.next()];
      expect(x).toBe(y);
      expect(x).not.toBe(z);
    }
  });
});

describe('helpers', () => {
  it('growthFor goes from the first size to the last in the given calls', () => {
    const g = growthFor(20_000, 600_000, 33);
    expect(20_000 * g ** 32).toBeCloseTo(600_000, -1);
    expect(growthFor(20_000, 20_000, 1)).toBe(1);
  });

  it('toolOutput is the asked length of numbered lines', () => {
    const out = toolOutput(3, 5_000);
    expect(out).toHaveLength(5_000);
    expect(out.split('\n')[0]).toMatch(/^ {5}1\t/);
  });

  it('rng is seeded: the same seed the same sequence, in [0, 1)', () => {
    const [a, b] = [rng(7), rng(7)];
    const xs = Array.from({ length: 100 }, () => a());
    expect(xs).toEqual(Array.from({ length: 100 }, () => b()));
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...xs)).toBeLessThan(1);
    expect(new Set(xs).size).toBe(100);
  });
});
