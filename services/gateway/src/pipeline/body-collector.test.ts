import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BodyCollector, PREALLOCATE } from './body-collector';

/** `body` sent in chunks of `size` bytes, as a socket would hand them over. */
function collect(body: Buffer, size: number, declared: number): Buffer {
  const c = new BodyCollector(declared);
  for (let at = 0; at < body.length; at += size) c.add(body.subarray(at, at + size));
  expect(c.size).toBe(body.length);
  return c.body();
}

describe('BodyCollector', () => {
  const large = randomBytes(PREALLOCATE * 2 + 12_345);

  it('gives back a small body exactly, one chunk without a copy', () => {
    const small = randomBytes(70_000);
    expect(collect(small, 16_384, small.length).equals(small)).toBe(true);
    const one = new BodyCollector(small.length);
    one.add(small);
    expect(one.body()).toBe(small);
  });

  it('gives back a body past the preallocation exactly, with or without a declared length', () => {
    const declared = collect(large, 65_536, large.length);
    expect(declared.equals(large)).toBe(true);
    // Gathered into one buffer of the declared size, not a concatenation made at the end.
    expect(declared.buffer.byteLength).toBeGreaterThanOrEqual(large.length);
    expect(collect(large, 65_536, Number.NaN).equals(large)).toBe(true);
    expect(collect(large, 1_000_003, large.length).equals(large)).toBe(true);
  });

  it('keeps every byte when more arrives than was declared', () => {
    const declared = PREALLOCATE + 10;
    const got = collect(large, 65_536, declared);
    expect(got.length).toBe(large.length);
    expect(got.equals(large)).toBe(true);
  });

  it('does not preallocate a declared size the bytes have not reached', () => {
    const c = new BodyCollector(64 * PREALLOCATE);
    c.add(randomBytes(PREALLOCATE - 1));
    const got = c.body();
    expect(got.length).toBe(PREALLOCATE - 1);
    expect(got.buffer.byteLength).toBeLessThan(2 * PREALLOCATE);
  });
});
