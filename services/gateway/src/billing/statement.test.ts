import { describe, expect, it } from 'vitest';
import type { PlanRecord } from '../tenancy/account-queries';
import { dailyCharges, monthlyStatement, monthRange } from './statement';

const plan = (id: string, priceCents: number, perSeat: boolean): PlanRecord => ({
  id,
  name: id,
  priceCents,
  currency: 'EUR',
  perSeat,
  maxSeats: perSeat ? null : 1,
  trialDays: 14,
});
const team = plan('team', 1900, true);
const solo = plan('solo', 900, false);
const at = (iso: string) => new Date(iso);
const seat = (from: string, to: string | null = null) => ({
  createdAt: at(from),
  removedAt: to ? at(to) : null,
});

describe('billing statements', () => {
  it('a full month after the trial costs price × seats, exactly', () => {
    const s = {
      plan: team,
      createdAt: at('2026-01-01T00:00:00Z'),
      trialEndsAt: at('2026-01-15T00:00:00Z'),
      seats: [seat('2026-01-01'), seat('2026-01-02'), seat('2026-01-03')],
    };
    const st = monthlyStatement(s, '2026-03');
    expect(st.totalCents).toBe(3 * 1900);
    expect(st.billableDays).toBe(31);
    expect(st.lines).toEqual([{ from: '2026-03-01', to: '2026-03-31', days: 31, seats: 3, cents: 5700 }]);
  });

  it('the trial is free, including the day it ends on', () => {
    const s = {
      plan: solo,
      createdAt: at('2026-04-10T09:00:00Z'),
      trialEndsAt: at('2026-04-24T09:00:00Z'),
      seats: [seat('2026-04-10T09:00:00Z')],
    };
    const st = monthlyStatement(s, '2026-04');
    // 10..24 April are trial days (15), 25..30 April billable (6 of 30 days)
    expect(st.trialDays).toBe(15);
    expect(st.billableDays).toBe(6);
    expect(st.totalCents).toBe(Math.round((900 * 6) / 30));
  });

  it('seats count per day: an added seat and a removed one are prorated', () => {
    const s = {
      plan: team,
      createdAt: at('2025-01-01T00:00:00Z'),
      trialEndsAt: null,
      seats: [seat('2025-01-01'), seat('2026-06-11T12:00:00Z'), seat('2025-01-01', '2026-06-20T08:00:00Z')],
    };
    const st = monthlyStatement(s, '2026-06');
    expect(st.lines.map((l) => [l.from, l.to, l.seats])).toEqual([
      ['2026-06-01', '2026-06-10', 2],
      ['2026-06-11', '2026-06-20', 3],
      ['2026-06-21', '2026-06-30', 2],
    ]);
    expect(st.seatDays).toBe(10 * 2 + 10 * 3 + 10 * 2);
    expect(st.totalCents).toBe(Math.round((1900 * 70) / 30));
  });

  it('a per-seat plan bills at least one seat; days before the account existed are not billed', () => {
    const s = { plan: team, createdAt: at('2026-02-20T00:00:00Z'), trialEndsAt: null, seats: [] };
    const days = dailyCharges(s, at('2026-02-01T00:00:00Z'), at('2026-03-01T00:00:00Z'));
    expect(days).toHaveLength(9);
    expect(days.every((d) => d.seats === 1)).toBe(true);
    expect(monthlyStatement(s, '2026-02').totalCents).toBe(Math.round((1900 * 9) / 28));
  });

  it('reads months in UTC and refuses what is not one', () => {
    expect(monthRange('2024-02').days).toBe(29);
    expect(() => monthRange('2024-13')).toThrow(RangeError);
  });
});
