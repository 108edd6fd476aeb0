import type { AccountRecord, PlanRecord } from '../tenancy/account-queries';
import type { SeatSpan } from '../tenancy/member-queries';
import type { Store } from '../store';

const DAY = 86_400_000;

/** What billing needs to know about an account. */
export interface BillingSubject {
  plan: PlanRecord;
  createdAt: Date;
  trialEndsAt: Date | null;
  /** Every seat that existed at some point in the period. */
  seats: SeatSpan[];
}

/** Reads the seats an account had over [from, to). */
export async function billingSubject(
  store: Pick<Store, 'members'>,
  account: AccountRecord,
  plan: PlanRecord,
  from: Date,
  to: Date,
): Promise<BillingSubject> {
  return {
    plan,
    createdAt: account.createdAt,
    trialEndsAt: account.trialEndsAt,
    seats: await store.members.seatSpans(account.id, from, to),
  };
}

/** The plan charge for one UTC day. */
export interface DayCharge {
  day: Date;
  seats: number;
  inTrial: boolean;
  /** Fractional cents in the plan's currency; rounded only on the statement's total. */
  cents: number;
}

export interface StatementLine {
  from: string;
  to: string;
  days: number;
  seats: number;
  cents: number;
}

export interface Statement {
  month: string;
  plan: string;
  currency: string;
  unitPriceCents: number;
  perSeat: boolean;
  trialDays: number;
  billableDays: number;
  seatDays: number;
  lines: StatementLine[];
  totalCents: number;
}

const startOfDay = (t: number) => Math.floor(t / DAY) * DAY;

/** The UTC month `YYYY-MM` as [start, end). */
export function monthRange(month: string): { from: Date; to: Date; days: number } {
  const m = /^(\d{4})-(\d{2})$/.exec(month);
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 12) throw new RangeError(`not a month: ${month}`);
  const from = Date.UTC(Number(m[1]), Number(m[2]) - 1, 1);
  const to = Date.UTC(Number(m[1]), Number(m[2]), 1);
  return { from: new Date(from), to: new Date(to), days: Math.round((to - from) / DAY) };
}

export function monthOf(t: number): string {
  return new Date(t).toISOString().slice(0, 7);
}

/**
 * The plan charge of each UTC day in [from, to). A month costs the plan price per seat,
 * spread evenly over its days: a day is free while the trial lasts (any part of it) or
 * before the account existed, and a per-seat plan counts every seat active at some point of
 * the day, with at least one. A month with no changes therefore costs exactly price × seats.
 */
export function dailyCharges(s: BillingSubject, from: Date, to: Date): DayCharge[] {
  const out: DayCharge[] = [];
  const created = startOfDay(s.createdAt.getTime());
  for (let day = startOfDay(from.getTime()); day < to.getTime(); day += DAY) {
    if (day < created) continue;
    const end = day + DAY;
    const inTrial = !!s.trialEndsAt && s.trialEndsAt.getTime() > day;
    const active = s.seats.filter(
      (m) => m.createdAt.getTime() < end && (!m.removedAt || m.removedAt.getTime() >= day),
    ).length;
    const seats = s.plan.perSeat ? Math.max(1, active) : 1;
    const d = new Date(day);
    const daysInMonth = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
    out.push({ day: d, seats, inTrial, cents: inTrial ? 0 : (s.plan.priceCents * seats) / daysInMonth });
  }
  return out;
}

/** What an account owes for one month of its plan, with a line per run of days at the same seat count. */
export function monthlyStatement(s: BillingSubject, month: string): Statement {
  const { from, to } = monthRange(month);
  const days = dailyCharges(s, from, to);
  const billable = days.filter((d) => !d.inTrial);
  const lines: StatementLine[] = [];
  for (const d of billable) {
    const last = lines.at(-1);
    const iso = d.day.toISOString().slice(0, 10);
    if (last && last.seats === d.seats && Date.parse(last.to) + DAY === d.day.getTime()) {
      last.to = iso;
      last.days += 1;
      last.cents += d.cents;
    } else {
      lines.push({ from: iso, to: iso, days: 1, seats: d.seats, cents: d.cents });
    }
  }
  for (const line of lines) line.cents = Math.round(line.cents * 100) / 100;
  return {
    month,
    plan: s.plan.id,
    currency: s.plan.currency,
    unitPriceCents: s.plan.priceCents,
    perSeat: s.plan.perSeat,
    trialDays: days.length - billable.length,
    billableDays: billable.length,
    seatDays: billable.reduce((n, d) => n + d.seats, 0),
    lines,
    totalCents: Math.round(billable.reduce((n, d) => n + d.cents, 0)),
  };
}
