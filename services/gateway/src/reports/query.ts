import { z } from 'zod';
import { GatewayError } from '../lib/errors';
import type { Page } from '../store';

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/;
const TIMESTAMP_HELP =
  'must be an RFC 3339 timestamp such as 2026-11-20T00:00:00Z (or a UTC date, 2026-11-20)';

/** An RFC 3339 timestamp, or a date meaning its midnight UTC. */
export const timestamp = z
  .string()
  .regex(TIMESTAMP, TIMESTAMP_HELP)
  .transform((s) => new Date(s.length === 10 ? `${s}T00:00:00Z` : s))
  .refine((d) => !Number.isNaN(d.getTime()), TIMESTAMP_HELP);

/** The provider's list parameters: `limit` (1 to 1000, default 20) and one of `after_id` / `before_id`. */
export const listParams = {
  limit: z.coerce.number().int().min(1).max(1000).default(20),
  after_id: z.string().min(1).optional(),
  before_id: z.string().min(1).optional(),
};

export function pageQuery(q: {
  limit: number;
  after_id?: string | undefined;
  before_id?: string | undefined;
}) {
  if (q.after_id && q.before_id)
    throw new GatewayError('invalid_request_error', 'after_id, before_id: use one of them, not both.');
  return { limit: q.limit, afterId: q.after_id ?? null, beforeId: q.before_id ?? null };
}

/** A page in the provider's list shape. */
export function listJson<T extends { id: string }, J>(page: Page<T>, toJson: (row: T) => J) {
  return {
    data: page.rows.map(toJson),
    has_more: page.hasMore,
    first_id: page.rows[0]?.id ?? null,
    last_id: page.rows.at(-1)?.id ?? null,
  };
}
