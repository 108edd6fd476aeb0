import { describe, expect, it } from 'vitest';
import type { CatalogPlan } from './catalog-queries';
import type { SeatRecord } from './invoice-queries';
import { addMonths, periodLines, prorate, roundHalfUp, totals } from './proration';

const plan = (id: string, priceCents: number, perSeat: boolean): CatalogPlan => ({
  id,
  name: id[0]!.toUpperCase() + id.slice(1),
  priceCents,
  currency: 'EUR',
  perSeat,
  minSeats: 1,
  maxSeats: perSeat ? null : 1,
  trialDays: 14,
  defaultLimitRpm: null,
  defaultLimitTpm: null,
  defaultLimitItpm: null,
  defaultLimitOtpm: null,
  defaultMonthlySpendCapCents: null,
  retentionDays: 30,
  features: [],
  stripePriceId: null,
  visibility: 'public',
  offeredTo: [],
});
const solo = plan('solo', 900, false);
const team = plan('team', 1900, true);
const scale = plan('scale', 4900, true);
const seat = (email: string, added: string, removed: string | null = null): SeatRecord => ({
  id: `user_${email}`,
  email,
  createdAt: new Date(added),
  removedAt: removed ? new Date(removed) : null,
});

describe('rounding rule', () => {
  it('rounds to the nearest cent, halves up, in integers', () => {
    expect(roundHalfUp(1, 2)).toBe(1); // 0.5 → 1
    expect(roundHalfUp(149, 100)).toBe(1); // 1.49 → 1
    expect(roundHalfUp(150, 100)).toBe(2); // 1.50 → 2
    expect(prorate(900, 1, 8)).toBe(113); // 900 × 1 / 8 = 112.5 → 113
    expect(prorate(1900, 21, 31)).toBe(1287); // 39900 / 31 = 1287.09… → 1287
  });

  it('months keep their day, or the last day of a shorter month', () => {
    expect(addMonths(new Date('2026-01-31T10:00:00Z'), 1).toISOString()).toBe('2026-02-28T10:00:00.000Z');
    expect(addMonths(new Date('2026-03-10T00:00:00Z'), 1).toISOString()).toBe('2026-04-10T00:00:00.000Z');
    expect(addMonths(new Date('2026-12-15T00:00:00Z'), 1).toISOString()).toBe('2027-01-15T00:00:00.000Z');
  });
});

describe('period lines, prorated by the day', () => {
  it('team: a seat added, a seat freed, then an upgrade to scale (worked out by hand)', () => {
    // Period 2026-03-10 → 2026-04-10: 31 days. Two members at the start.
    const lines = periodLines({
      start: new Date('2026-03-10T00:00:00Z'),
      end: new Date('2026-04-10T00:00:00Z'),
      plan: team,
      planChanges: [{ at: new Date('2026-04-01T12:00:00Z'), plan: scale }],
      seats: [
        seat('a@x.test', '2026-02-01T00:00:00Z'),
        seat('b@x.test', '2026-02-01T00:00:00Z', '2026-03-25T09:00:00Z'),
        seat('c@x.test', '2026-03-20T15:00:00Z'),
      ],
    });
    expect(lines.map((l) => [l.quantity, l.days, l.amountCents])).toEqual([
      // Base: 2 seats × 1900 = 3800.
      [2, null, 3800],
      // c added 03-20 15:00: 20.375 days left, a part day counts whole → 21; 1900 × 21 / 31 = 1287.09… → 1287.
      [1, 21, 1287],
      // b freed 03-25 09:00: paid through that day, 15.625 days left → 15 whole; 1900 × 15 / 31 = 919.35… → −919.
      [1, 15, -919],
      // Upgrade 04-01 12:00 with 2 members: 8.5 days left → 9.
      // Team credit: 2 × 1900 × 9 / 31 = 34200 / 31 = 1103.22… → −1103.
      [2, 9, -1103],
      // Scale charge: 2 × 4900 × 9 / 31 = 88200 / 31 = 2845.16… → 2845.
      [2, 9, 2845],
    ]);
    // 3800 + 1287 − 919 − 1103 + 2845 = 5910.
    expect(totals(lines)).toEqual({ subtotalCents: 5910, taxCents: 0, totalCents: 5910 });
    expect(lines[1]!.description).toBe('Seat added: c@x.test, from 2026-03-20');
  });

  it('solo → team mid-period: the flat price credited, the seat price charged', () => {
    // Period 2026-06-01 → 2026-07-01: 30 days; the change at 06-16 00:00 leaves exactly 15 days.
    const lines = periodLines({
      start: new Date('2026-06-01T00:00:00Z'),
      end: new Date('2026-07-01T00:00:00Z'),
      plan: solo,
      planChanges: [{ at: new Date('2026-06-16T00:00:00Z'), plan: team }],
      seats: [seat('solo@x.test', '2026-05-01T00:00:00Z')],
    });
    // 900 − 900 × 15 / 30 (= 450) + 1900 × 15 / 30 (= 950) = 1400.
    expect(lines.map((l) => l.amountCents)).toEqual([900, -450, 950]);
    expect(totals(lines).totalCents).toBe(1400);
  });

  it('a flat plan charges one seat whatever the members; a per-seat plan at least its minimum', () => {
    const lines = periodLines({
      start: new Date('2026-06-01T00:00:00Z'),
      end: new Date('2026-07-01T00:00:00Z'),
      plan: { ...team, minSeats: 3 },
      planChanges: [],
      // One member at the start, a second added: still under the minimum of 3, so no line.
      seats: [seat('a@x.test', '2026-05-01T00:00:00Z'), seat('b@x.test', '2026-06-10T00:00:00Z')],
    });
    expect(lines.map((l) => [l.quantity, l.amountCents])).toEqual([[3, 5700]]);
  });
});
