import type { Context } from 'hono';
import { z } from 'zod';
import { GatewayError } from '../lib/errors';
import { parseOr400 } from '../lib/validation';
import type { Page } from '../store';

/**
 * The query string as an object for zod: `name[]=a&name[]=b` (the provider's style) and
 * repeated `name=a&name=b` both become `name: ['a', 'b']` for the given array parameters.
 */
export function queryObject(c: Context, arrays: readonly string[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = { ...c.req.query() };
  for (const name of arrays) {
    delete out[`${name}[]`];
    const values = [...(c.req.queries(`${name}[]`) ?? []), ...(c.req.queries(name) ?? [])].flatMap((v) => v.split(',')).filter(Boolean);
    if (values.length) out[name] = values;
    else delete out[name];
  }
  return out;
}

export function parseQuery<T extends z.ZodType>(c: Context, schema: T, arrays: readonly string[] = []): z.infer<T> {
  return parseOr400(schema, queryObject(c, arrays));
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/;
const TIMESTAMP_HELP = 'must be an RFC 3339 timestamp such as 2026-11-20T00:00:00Z (or a UTC date, 2026-11-20)';

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

export function pageQuery(q: { limit: number; after_id?: string | undefined; before_id?: string | undefined }) {
  if (q.after_id && q.before_id) throw new GatewayError('invalid_request_error', 'after_id, before_id: use one of them, not both.');
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

/** A JSON body that may be absent (such as a rotation with no options): absent reads as `{}`. */
export async function optionalJsonBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  const text = (await c.req.text()).trim();
  if (!text) return parseOr400(schema, {});
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new GatewayError('invalid_request_error', 'Request body is not valid JSON.');
  }
  return parseOr400(schema, value);
}
