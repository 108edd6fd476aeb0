import type { Context } from 'hono';

/** A form's fields, as Hono's parseBody gives them. */
export type FormFields = Record<string, string | File | (string | File)[]>;

/**
 * A request's body as its route declared it, within the route's bounds: the one way a handler
 * reads a body. The reader is pipeline/body-reader.ts, mounted per route family; it lives above
 * the proxy (it bounds JSON with the proxy's scan), so rooms below it, `operation()` here in lib,
 * reach it through the request's context.
 */
export interface RequestBody {
  /** The bytes as sent, or inflated for a gzip-able body; read once, then kept. */
  bytes(): Promise<Buffer>;
  /** JSON, bounded in bytes, nesting depth and values before it is parsed; `optional`: empty reads as undefined. */
  json(opts?: { optional?: boolean }): Promise<unknown>;
  /** A urlencoded or multipart form; `all`: repeated fields as arrays. */
  form(opts?: { all?: boolean }): Promise<FormFields>;
  /**
   * Reads whatever was sent, within the bounds, and drops it: a route that takes no body acts
   * only once the request is whole, so an oversized one is refused (413), never acted on.
   */
  consume(): Promise<void>;
}

export interface RequestBodyVariables {
  body: RequestBody;
}

/** The body reader the route's family mounted; a route that reads a body without one is a bug. */
export function requestBody(c: Context): RequestBody {
  const body = c.get('body') as RequestBody | undefined;
  if (!body)
    throw new Error(`${c.req.method} ${c.req.path} reads a body but no body reader is mounted for it`);
  return body;
}
