import { describe, expect, it } from 'vitest';
import { mapBounded } from './concurrency';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('mapBounded', () => {
  it('keeps input order and never exceeds the limit', async () => {
    let active = 0;
    let peak = 0;
    const out = await mapBounded([5, 1, 4, 2, 3, 1, 2], 3, async (n) => {
      peak = Math.max(peak, ++active);
      await tick(n * 3);
      active--;
      return n * 10;
    });
    expect(out).toEqual([50, 10, 40, 20, 30, 10, 20]);
    expect(peak).toBe(3);
  });

  it('on the first failure starts nothing new, signals the calls in flight, and throws that failure', async () => {
    const started: number[] = [];
    const aborted: number[] = [];
    const run = mapBounded([0, 1, 2, 3, 4, 5], 2, async (n, _i, signal) => {
      started.push(n);
      if (n === 1) throw new Error('chunk 1 failed');
      await new Promise<void>((resolve) =>
        signal.addEventListener('abort', () => (aborted.push(n), resolve()), { once: true }),
      );
      return n;
    });
    await expect(run).rejects.toThrow('chunk 1 failed');
    expect(started).toEqual([0, 1]);
    expect(aborted).toEqual([0]);
  });

  it('stops when the caller aborts, and refuses a bad limit', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(mapBounded([1], 1, async (n) => n, controller.signal)).rejects.toThrow('stop');
    await expect(mapBounded([1], 0, async (n) => n)).rejects.toThrow(RangeError);
  });
});
