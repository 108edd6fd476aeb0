import { describe, expect, it } from 'vitest';
import { labelledDays, valueScale } from './chart';

describe('the chart value scale', () => {
  it('steps of 1, 2 or 5 times a power of ten, topping the highest day', () => {
    expect(valueScale(14_068, 1)).toEqual([5_000, 10_000, 15_000, 20_000]);
    expect(valueScale(8_000, 1)).toEqual([2_000, 4_000, 6_000, 8_000]);
    expect(valueScale(6.45, 0.01)).toEqual([2, 4, 6, 8]);
    expect(valueScale(0.3, 0.01)).toEqual([0.1, 0.2, 0.3, 0.4]);
  });

  it('never finer than what the format shows apart: whole tokens, hundredths of a cent', () => {
    expect(valueScale(0, 1)).toEqual([1, 2, 3, 4]);
    expect(valueScale(3, 1)).toEqual([1, 2, 3, 4]);
    expect(valueScale(0, 0.01)).toEqual([0.01, 0.02, 0.03, 0.04]);
  });
});

describe('the days that carry a label', () => {
  it('all of a week; about seven of a month, the last day always among them', () => {
    expect([...labelledDays(7)].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    const month = [...labelledDays(31)].sort((a, b) => a - b);
    expect(month.at(-1)).toBe(30);
    expect(month.length).toBeLessThanOrEqual(7);
    expect(month.length).toBeGreaterThanOrEqual(5);
    expect(labelledDays(0).size).toBe(0);
  });
});
