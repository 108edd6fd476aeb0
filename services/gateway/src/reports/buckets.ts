import { GatewayError } from '../lib/errors';

/** Bucket widths of the provider's reports, with their default and maximum bucket counts per page. */
export const BUCKET_WIDTHS = {
  '1m': { ms: 60_000, defaultLimit: 60, maxLimit: 1440 },
  '1h': { ms: 3_600_000, defaultLimit: 24, maxLimit: 168 },
  '1d': { ms: 86_400_000, defaultLimit: 7, maxLimit: 31 },
} as const;

export type BucketWidth = keyof typeof BUCKET_WIDTHS;

export interface BucketPage {
  widthMs: number;
  /** Bucket starts on this page, in order. */
  starts: Date[];
  from: Date;
  to: Date;
  nextPage: string | null;
}

export interface BucketRequest {
  startingAt: Date;
  endingAt: Date | null;
  width: BucketWidth;
  limit: number | undefined;
  page: string | undefined;
  now: number;
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
 * Splits [starting_at, ending_at) into UTC-aligned buckets and picks the page asked for:
 * `starting_at` snaps down to its bucket, the range runs to the bucket holding `ending_at`
 * (default: now), and `page` is the opaque `next_page` of the previous answer.
 */
export function planBuckets(r: BucketRequest): BucketPage {
  const { ms, defaultLimit, maxLimit } = BUCKET_WIDTHS[r.width];
  const limit = r.limit ?? defaultLimit;
  if (limit > maxLimit) throw new GatewayError('invalid_request_error', `limit: at most ${maxLimit} buckets for bucket_width=${r.width}.`);
  const start = Math.floor(r.startingAt.getTime() / ms) * ms;
  const endAt = r.endingAt?.getTime() ?? r.now;
  if (endAt <= r.startingAt.getTime()) throw new GatewayError('invalid_request_error', 'ending_at: must be after starting_at.');
  const end = Math.ceil(endAt / ms) * ms;
  let from = start;
  if (r.page !== undefined) {
    const t = decodePage(r.page);
    if (t === null || t < start || t >= end || (t - start) % ms !== 0) {
      throw new GatewayError('invalid_request_error', 'page: not a next_page token of this report; send the same starting_at, ending_at and bucket_width as before.');
    }
    from = t;
  }
  const to = Math.min(end, from + limit * ms);
  const starts: Date[] = [];
  for (let t = from; t < to; t += ms) starts.push(new Date(t));
  return { widthMs: ms, starts, from: new Date(from), to: new Date(to), nextPage: to < end ? encodePage(to) : null };
}

/** The provider's bucketed report shape: every bucket of the page, with its results (possibly none). */
export function bucketed<R>(page: BucketPage, results: Map<number, R[]>) {
  return {
    data: page.starts.map((s) => ({
      starting_at: isoSeconds(s),
      ending_at: isoSeconds(new Date(s.getTime() + page.widthMs)),
      results: results.get(s.getTime()) ?? [],
    })),
    has_more: page.nextPage !== null,
    next_page: page.nextPage,
  };
}
