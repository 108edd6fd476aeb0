import { describe, expect, it } from 'vitest';
import { newId, newTimeOrderedId } from './ids';

describe('time-ordered ids', () => {
  it('have the shape of every other id: a prefix and 24 base62 characters', () => {
    expect(newTimeOrderedId('req')).toMatch(/^req_[0-9A-Za-z]{24}$/);
    expect(newTimeOrderedId('req').length).toBe(newId('req').length);
  });

  it('sort as text in the order of their times, to the millisecond, across centuries', () => {
    const times = [0, 1, 61, 62, 1_764_115_200_000, 1_764_115_200_001, 4_102_444_800_000, 62 ** 8 - 1];
    const ids = times.map((t) => newTimeOrderedId('req', t));
    expect([...ids].sort()).toEqual(ids);
    expect(ids.map((id) => id.slice(4, 12))).toEqual([
      '00000000',
      '00000001',
      '0000000z',
      '00000010',
      expect.any(String),
      expect.any(String),
      expect.any(String),
      'zzzzzzzz',
    ]);
  });

  it('differ within one millisecond by their 16 random characters', () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newTimeOrderedId('req', 1_764_115_200_000)));
    expect(ids.size).toBe(10_000);
  });
});
