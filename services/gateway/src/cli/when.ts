import { CliError, EXIT } from './backend';

const DAY = 86_400_000;
const HELP =
  'today, yesterday, Nd (N days ago), Nh (N hours ago), a date (2026-11-01) or an RFC 3339 timestamp';
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

const midnight = (t: number) => Math.floor(t / DAY) * DAY;

/**
 * A --since / --until value as an instant (UTC). A day named by `today`, `yesterday` or a
 * date starts at its midnight for --since and runs to its end for --until, so
 * `--since 2026-11-01 --until 2026-11-30` is all of November's first 30 days.
 */
export function parseWhen(flag: 'since' | 'until', value: string, now: number): Date {
  const v = value.trim().toLowerCase();
  const wholeDay = (start: number) => new Date(flag === 'until' ? start + DAY : start);
  let m: RegExpMatchArray | null;
  if (v === 'today') return wholeDay(midnight(now));
  if (v === 'yesterday') return wholeDay(midnight(now) - DAY);
  if ((m = v.match(/^(\d{1,4})d$/))) return new Date(now - Number(m[1]) * DAY);
  if ((m = v.match(/^(\d{1,6})h$/))) return new Date(now - Number(m[1]) * 3_600_000);
  if (/^\d{4}-\d{2}-\d{2}$/.test(v)) {
    const t = Date.parse(`${v}T00:00:00Z`);
    if (!Number.isNaN(t) && new Date(t).toISOString().startsWith(v)) return wholeDay(t);
  } else if (RFC3339.test(value.trim())) {
    const t = Date.parse(value.trim());
    if (!Number.isNaN(t)) return new Date(t);
  }
  throw new CliError(`--${flag}: expected ${HELP}; got '${value}'.`, EXIT.usage);
}

/** The range of a report: --since (default: the start of this month, UTC) to --until (default: now). */
export function parseRange(
  since: string | undefined,
  until: string | undefined,
  now: number,
): { from: Date; to: Date | null } {
  const d = new Date(now);
  const from = since
    ? parseWhen('since', since, now)
    : new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
  const to = until ? parseWhen('until', until, now) : null;
  if ((to ?? new Date(now)) <= from) {
    throw new CliError(
      `--until must be after --since (the range is ${from.toISOString()} to ${(to ?? new Date(now)).toISOString()}).`,
      EXIT.usage,
    );
  }
  return { from, to };
}

export const isMidnight = (d: Date) => d.getTime() % DAY === 0;
