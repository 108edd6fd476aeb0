import { describe, expect, it } from 'vitest';
import { MemoryBuckets, step } from './buckets';

const perMinute = (capacity: number) => ({ key: 'k', capacity, periodMs: 60_000 });

describe('token buckets', () => {
  it('allow a burst of the capacity, then refill continuously', () => {
    const b = new MemoryBuckets();
    const spec = perMinute(3);
    for (let i = 0; i < 3; i++) expect(b.take(spec, 1, 1, 0).ok).toBe(true);
    const refused = b.take(spec, 1, 1, 0);
    expect(refused.ok).toBe(false);
    expect(refused.retryAfterMs).toBeCloseTo(20_000, 6);
    expect(b.take(spec, 1, 1, 19_999).ok).toBe(false);
    expect(b.take(spec, 1, 1, 20_000).ok).toBe(true);
  });

  it('a check (cost 0) never takes; a charge may overdraw, down to minus one capacity', () => {
    const spec = perMinute(100);
    let s = step(spec, undefined, 0, 1, 0);
    expect(s.result.ok).toBe(true);
    expect(s.state.tokens).toBe(100);
    s = step(spec, s.state, 1000, -Infinity, 0);
    expect(s.state.tokens).toBe(-100);
    const check = step(spec, s.state, 0, 1, 0);
    expect(check.result.ok).toBe(false);
    expect(check.result.retryAfterMs).toBeCloseTo(60_600, 6);
    expect(check.result.resetMs).toBeCloseTo(120_000, 6);
  });

  it('a clock that goes backwards refills nothing', () => {
    const spec = perMinute(10);
    const s = step(spec, { tokens: 0, at: 10_000 }, 0, 1, 5_000);
    expect(s.result.ok).toBe(false);
    expect(s.state.at).toBe(10_000);
  });

  it('forgets buckets idle for longer than their period', () => {
    const b = new MemoryBuckets();
    b.take({ key: 'a', capacity: 1, periodMs: 1000 }, 1, 1, 0);
    b.take({ key: 'b', capacity: 1, periodMs: 1000 }, 1, 1, 61_000);
    expect(b.size).toBe(1);
  });
});
