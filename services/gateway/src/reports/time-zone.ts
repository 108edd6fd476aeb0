import { GatewayError } from '../lib/errors';

/**
 * The account's reporting time zone. Day buckets start at local midnight, so a day lasts
 * 23, 24 or 25 hours. Usage is rolled up by whole UTC hours, so only zones whose offset
 * from UTC is a whole number of hours (from 2000 to 2050) are accepted: their local days are
 * made of whole rollup hours and every day report stays exact. Zones such as Asia/Kolkata
 * (+5:30) or Asia/Kathmandu (+5:45) are refused with a message saying so.
 */
export const UTC = 'UTC';

const HOUR = 3_600_000;
const DAY = 86_400_000;
const formats = new Map<string, Intl.DateTimeFormat>();

function format(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formats.set(zone, f);
  }
  return f;
}

/** The local wall-clock time of an instant, as if it were UTC (milliseconds dropped). */
function wallClock(zone: string, t: number): number {
  const p: Record<string, number> = {};
  for (const part of format(zone).formatToParts(new Date(t)))
    if (part.type !== 'literal') p[part.type] = Number(part.value);
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour! % 24, p.minute!, p.second!);
}

/** Local time minus UTC at an instant, in milliseconds. */
export const offsetMs = (zone: string, t: number) => wallClock(zone, t) - Math.floor(t / 1000) * 1000;

/** The local time of an instant, `YYYY-MM-DD HH:MM:SS`. */
export const localTime = (zone: string, t: number) =>
  new Date(wallClock(zone, t)).toISOString().replace('T', ' ').slice(0, 19);

/** The local date of an instant, `YYYY-MM-DD`. */
export const localDate = (zone: string, t: number) => new Date(wallClock(zone, t)).toISOString().slice(0, 10);

const addDays = (date: string, n: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + n * DAY).toISOString().slice(0, 10);

/** The first instant of a local date: its midnight, or the end of the gap when clocks skip midnight. */
export function dayStart(zone: string, date: string): number {
  const wall = Date.parse(`${date}T00:00:00Z`);
  if (zone === UTC) return wall;
  let t = wall - offsetMs(zone, wall);
  t = wall - offsetMs(zone, t);
  while (localDate(zone, t) < date) t += HOUR;
  while (localDate(zone, t - HOUR) === date) t -= HOUR;
  return t;
}

/** The start of the local day holding `t`. */
export const startOfDay = (zone: string, t: number) => dayStart(zone, localDate(zone, t));
/** The start of the local day after the one starting at (or holding) `t`. */
export const nextDayStart = (zone: string, t: number) => dayStart(zone, addDays(localDate(zone, t), 1));
/** The start of the local day `n` days from the one holding `t`. */
export const shiftDays = (zone: string, t: number, n: number) =>
  dayStart(zone, addDays(localDate(zone, t), n));

/** The first day of the local month holding `t`, and of the months around it. */
export function monthStart(zone: string, t: number, monthsAhead = 0): number {
  const [y, m] = localDate(zone, t).split('-').map(Number) as [number, number];
  return dayStart(zone, new Date(Date.UTC(y, m - 1 + monthsAhead, 1)).toISOString().slice(0, 10));
}

const CHECK_FROM = Date.UTC(2000, 0, 1);
const CHECK_TO = Date.UTC(2050, 0, 1);
const checked = new Map<string, string>();

/** An IANA zone name, checked with Intl and canonicalised (`utc` → `UTC`); refused when not whole hours from UTC. */
export function checkTimeZone(name: string): string {
  const known = checked.get(name);
  if (known) return known;
  let zone: string;
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
    // Intl may answer a legacy alias (Asia/Kolkata → Asia/Calcutta): keep the name given, in its canonical case.
    zone = resolved.toLowerCase() === name.toLowerCase() ? resolved : name;
  } catch {
    throw new GatewayError(
      'invalid_request_error',
      `time_zone: '${name}' is not an IANA time zone name (such as UTC, Europe/Berlin or America/New_York).`,
    );
  }
  if (zone === 'Etc/UTC' || zone === 'Etc/GMT' || zone === 'GMT') zone = UTC;
  // Offsets last months between changes: a sample every 5 days finds every non-whole-hour period.
  for (let t = CHECK_FROM; t < CHECK_TO; t += 5 * DAY) {
    const off = offsetMs(zone, t);
    if (off % HOUR !== 0) {
      const m = Math.abs(off) / 60_000;
      const sign = off < 0 ? '-' : '+';
      throw new GatewayError(
        'invalid_request_error',
        `time_zone: ${zone} is ${sign}${Math.floor(m / 60)}:${String(m % 60).padStart(2, '0')} from UTC on ${new Date(t).toISOString().slice(0, 10)}; ` +
          'usage is rolled up by whole UTC hours, so only zones a whole number of hours from UTC are supported.',
      );
    }
  }
  checked.set(name, zone);
  return zone;
}
