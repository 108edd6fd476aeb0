import type { CatalogPlan } from './catalog-queries';
import type { InvoiceLine, SeatRecord } from './invoice-queries';

export const DAY = 86_400_000;

/** `d` plus `n` months on the same day of the month, or the month's last day when it has fewer (31 Jan + 1 = 28/29 Feb). */
export function addMonths(d: Date, n: number): Date {
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + n;
  const last = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      y,
      m,
      Math.min(d.getUTCDate(), last),
      d.getUTCHours(),
      d.getUTCMinutes(),
      d.getUTCSeconds(),
      d.getUTCMilliseconds(),
    ),
  );
}

/**
 * The rounding rule, in integer arithmetic: `numerator / denominator` to the nearest cent,
 * a half cent rounded up. A credit is the same figure negated, so a charge and the credit
 * for the same seat and days cancel exactly.
 */
export function roundHalfUp(numerator: number, denominator: number): number {
  return Math.floor((2 * numerator + denominator) / (2 * denominator));
}

/** Price × days / period days, rounded by the rule above. */
export function prorate(cents: number, days: number, periodDays: number): number {
  return roundHalfUp(cents * days, periodDays);
}

/** How many seats a plan charges for `members` members: one on a flat plan, else the members, at least `minSeats`. */
export function chargedSeats(plan: Pick<CatalogPlan, 'perSeat' | 'minSeats'>, members: number): number {
  return plan.perSeat ? Math.max(plan.minSeats, members) : 1;
}

export interface PeriodInput {
  start: Date;
  end: Date;
  /** The plan in force at `start`. */
  plan: CatalogPlan;
  /** Plan changes inside the period, in order. */
  planChanges: Array<{ at: Date; plan: CatalogPlan }>;
  seats: SeatRecord[];
}

const date = (d: Date) => d.toISOString().slice(0, 10);
const seatWord = (n: number) => `${n} seat${n === 1 ? '' : 's'}`;

/**
 * The lines of one billing period, charged in arrears: the plan for the seats held at the
 * period's start, then one line per change inside it, prorated by the day against the
 * period's length in days. A change counts from the UTC day it happens on: a seat added
 * (or a plan taken up) is charged for the remaining days including that day, part of a day
 * counted whole; a seat removed is paid through the day of its removal, so its credit
 * covers the whole days left after it. Each line is rounded to a cent by `roundHalfUp`; the
 * total is the sum of the rounded lines.
 */
export function periodLines(p: PeriodInput): InvoiceLine[] {
  const { start, end } = p;
  const periodDays = Math.round((end.getTime() - start.getTime()) / DAY);
  const daysLeft = (t: Date, partial: 'whole' | 'dropped') => {
    const exact = (end.getTime() - t.getTime()) / DAY;
    return Math.min(periodDays, Math.max(0, partial === 'whole' ? Math.ceil(exact) : Math.floor(exact)));
  };
  const inPeriod = (t: Date | null): t is Date => !!t && t > start && t < end;
  let members = p.seats.filter((s) => s.createdAt <= start && (!s.removedAt || s.removedAt > start)).length;
  let plan = p.plan;
  let seats = chargedSeats(plan, members);
  const lines: InvoiceLine[] = [
    {
      description: `${plan.name} plan, ${seatWord(seats)}, ${date(start)} to ${date(end)}`,
      quantity: seats,
      unitAmountCents: plan.priceCents,
      days: null,
      periodDays: null,
      amountCents: seats * plan.priceCents,
    },
  ];

  type Event = { at: Date; order: number; apply(): void };
  const events: Event[] = [];
  for (const s of p.seats) {
    if (inPeriod(s.createdAt)) {
      events.push({
        at: s.createdAt,
        order: 1,
        apply() {
          members += 1;
          const next = chargedSeats(plan, members);
          if (next > seats)
            lines.push(
              line(
                `Seat added: ${s.email}, from ${date(s.createdAt)}`,
                next - seats,
                plan.priceCents,
                daysLeft(s.createdAt, 'whole'),
                periodDays,
                1,
              ),
            );
          seats = next;
        },
      });
    }
    if (s.removedAt && s.removedAt >= start && s.removedAt < end) {
      events.push({
        at: s.removedAt,
        order: 0,
        apply() {
          members -= 1;
          const next = chargedSeats(plan, members);
          if (next < seats)
            lines.push(
              line(
                `Seat freed: ${s.email}, after ${date(s.removedAt!)}`,
                seats - next,
                plan.priceCents,
                daysLeft(s.removedAt!, 'dropped'),
                periodDays,
                -1,
              ),
            );
          seats = next;
        },
      });
    }
  }
  for (const change of p.planChanges) {
    if (!inPeriod(change.at)) continue;
    events.push({
      at: change.at,
      order: 2,
      apply() {
        const days = daysLeft(change.at, 'whole');
        const next = chargedSeats(change.plan, members);
        lines.push(
          line(
            `Unused time on the ${plan.name} plan (${seatWord(seats)}) from ${date(change.at)}`,
            seats,
            plan.priceCents,
            days,
            periodDays,
            -1,
          ),
        );
        lines.push(
          line(
            `Remaining time on the ${change.plan.name} plan (${seatWord(next)}) from ${date(change.at)}`,
            next,
            change.plan.priceCents,
            days,
            periodDays,
            1,
          ),
        );
        plan = change.plan;
        seats = next;
      },
    });
  }
  events.sort((a, b) => a.at.getTime() - b.at.getTime() || a.order - b.order);
  for (const e of events) e.apply();
  return lines;
}

function line(
  description: string,
  quantity: number,
  unit: number,
  days: number,
  periodDays: number,
  sign: 1 | -1,
): InvoiceLine {
  return {
    description,
    quantity,
    unitAmountCents: unit,
    days,
    periodDays,
    amountCents: sign * prorate(unit * quantity, days, periodDays),
  };
}

export function totals(lines: InvoiceLine[]): {
  subtotalCents: number;
  taxCents: number;
  totalCents: number;
} {
  const subtotalCents = lines.reduce((n, l) => n + l.amountCents, 0);
  // Tax has its place on the invoice but is not computed yet.
  const taxCents = 0;
  return { subtotalCents, taxCents, totalCents: subtotalCents + taxCents };
}
