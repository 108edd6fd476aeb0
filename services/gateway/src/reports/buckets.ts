import { GatewayError } from '../lib/errors';
import { nextDayStart, startOfDay, UTC } from './time-zone';

/** Bucket widths of the provider's reports, with their default and maximum bucket counts per page. */
export const BUCKET_WIDTHS = {
  '1m': { ms: 60_000, defaultLimit: 60, maxLimit: 1440 },
  '1h': { ms: 3_600_000, defaultLimit: 24, maxLimit: 168 },
  '1d': { ms: 86_400_000, defaultLimit: 7, maxLimit: 31 },
} as const;

export type BucketWidth = keyof typeof BUCKET_WIDTHS;

export interface BucketPage {
  /** The nominal width; day buckets in a zone with daylight saving last 23 or 25 hours on the change days. */
  widthMs: number;
  /** Bucket starts on this page, in order, and where each ends. */
  starts: Date[];
  ends: Date[];
  from: Date;
  to: Date;
  nextPage: string | null;
  /** The reporting time zone the day buckets follow. */
  zone: string;
  /** The start of the bucket holding an instant, as the key `bucketed` reads results under. */
  key(d: Date): number;
}

export interface BucketRequest {
  startingAt: Date;
  endingAt: Date | null;
  width: BucketWidth;
  limit: number | undefined;
  page: string | undefined;
  now: number;
  /** Day buckets start at local midnight in this IANA zone (default UTC); hour and minute buckets are UTC's. */
  timeZone?: string;
}

/** How to find the bucket holding an instant, and the one after it. */
interface Grid {
  snap(t: number): number;
  next(t: number): number;
}

function gridOf(width: BucketWidth, zone: string): Grid {
  if (width === '1d' && zone !== UTC)
    return { snap: (t) => startOfDay(zone, t), next: (t) => nextDayStart(zone, t) };
  const { ms } = BUCKET_WIDTHS[width];
  return { snap: (t) => Math.floor(t / ms) * ms, next: (t) => t + ms };
}

/** `2026-11-20T00:00:00Z`, as the provider writes bucket bounds. */
export const isoSeconds = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

const encodePage = (t: number) => `page_${Buffer.from(String(t)).toString('base64url')}`;

function decodePage(token: string): number | null {
  if (!token.startsWith('page_')) return null;
  const t = Number(Buffer.from(token.slice(5), 'base64url').toString());
  return Number.isSafeInteger(t) ? t : null;
}

/**
 * Splits [starting_at, ending_at) into buckets (UTC-aligned, or local days in the account's
 * zone) and picks the page asked for: `starting_at` snaps down to its bucket, the range runs
 * to the bucket holding `ending_at` (default: now), and `page` is the opaque `next_page` of
 * the previous answer.
 */
export function planBuckets(r: BucketRequest): BucketPage {
  const { ms, defaultLimit, maxLimit } = BUCKET_WIDTHS[r.width];
  const zone = r.timeZone ?? UTC;
  const grid = gridOf(r.width, zone);
  const limit = r.limit ?? defaultLimit;
  if (limit > maxLimit)
    throw new GatewayError(
      'invalid_request_error',
      `limit: at most ${maxLimit} buckets for bucket_width=${r.width}.`,
    );
  const start = grid.snap(r.startingAt.getTime());
  const endAt = r.endingAt?.getTime() ?? r.now;
  if (endAt <= r.startingAt.getTime())
    throw new GatewayError('invalid_request_error', 'ending_at: must be after starting_at.');
  const lastStart = grid.snap(endAt);
  const end = lastStart === endAt ? endAt : grid.next(lastStart);
  let from = start;
  if (r.page !== undefined) {
    const t = decodePage(r.page);
    if (t === null || t < start || t >= end || grid.snap(t) !== t) {
      throw new GatewayError(
        'invalid_request_error',
        'page: not a next_page token of this report; send the same starting_at, ending_at and bucket_width as before.',
      );
    }
    from = t;
  }
  const starts: Date[] = [];
  const ends: Date[] = [];
  let t = from;
  while (t < end && starts.length < limit) {
    starts.push(new Date(t));
    t = grid.next(t);
    ends.push(new Date(t));
  }
  return {
    widthMs: ms,
    starts,
    ends,
    from: new Date(from),
    to: new Date(t),
    nextPage: t < end ? encodePage(t) : null,
    zone,
    key: (d) => grid.snap(d.getTime()),
  };
}

/** The provider's bucketed report shape: every bucket of the page, with its results (possibly none). */
export function bucketed<R>(page: BucketPage, results: Map<number, R[]>) {
  return {
    data: page.starts.map((s, i) => ({
      starting_at: isoSeconds(s),
      ending_at: isoSeconds(page.ends[i]!),
      results: results.get(s.getTime()) ?? [],
    })),
    has_more: page.nextPage !== null,
    next_page: page.nextPage,
  };
}
