import { describe, expect, it } from 'vitest';
import { periodOf } from './period';

const at = (s: string) => Date.parse(s);

describe('budget periods (UTC)', () => {
  it('a day runs from midnight to midnight', () => {
    expect(periodOf('daily', at('2026-03-15T23:59:59Z'))).toEqual({
      label: '2026-03-15',
      start: at('2026-03-15T00:00:00Z'),
      end: at('2026-03-16T00:00:00Z'),
    });
  });

  it('a week starts on Monday, also across a month and a year', () => {
    // 2026-03-15 is a Sunday: its week began on Monday 9 March.
    expect(periodOf('weekly', at('2026-03-15T12:00:00Z'))).toMatchObject({
      label: 'W2026-03-09',
      start: at('2026-03-09T00:00:00Z'),
    });
    expect(periodOf('weekly', at('2026-03-16T00:00:00Z')).label).toBe('W2026-03-16');
    expect(periodOf('weekly', at('2026-01-01T08:00:00Z'))).toMatchObject({
      label: 'W2025-12-29',
      end: at('2026-01-05T00:00:00Z'),
    });
  });

  it('a month ends where the next begins, December included', () => {
    expect(periodOf('monthly', at('2026-12-31T23:00:00Z'))).toEqual({
      label: '2026-12',
      start: at('2026-12-01T00:00:00Z'),
      end: at('2027-01-01T00:00:00Z'),
    });
    expect(periodOf('monthly', at('2028-02-29T10:00:00Z')).end).toBe(at('2028-03-01T00:00:00Z'));
  });
});
