import type { MiddlewareHandler } from 'hono';
import type { z } from 'zod';
import { GatewayError } from './errors';

export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => {
      const path = i.path
        .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
        .join('')
        .replace(/^\./, '');
      const message = i.code === 'invalid_type' && i.input === undefined ? 'Field required' : i.message;
      return path ? `${path}: ${message}` : message;
    })
    .join('; ');
}

/**
 * The path of the first string (or object key) holding a NUL character, or null. PostgreSQL's
 * text cannot store NUL: a filter or a name with one would otherwise fail there with a 500.
 */
export function nulPath(value: unknown): string | null {
  const todo: Array<[unknown, string]> = [[value, '']];
  for (let next = todo.pop(); next; next = todo.pop()) {
    const [v, path] = next;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return path;
    } else if (Array.isArray(v)) v.forEach((item, i) => todo.push([item, `${path}[${i}]`]));
    else if (v && typeof v === 'object')
      for (const [k, item] of Object.entries(v)) {
        const at = path ? `${path}.${k}` : k;
        if (k.includes('\u0000')) return at;
        todo.push([item, at]);
      }
  }
  return null;
}

/**
 * `nul: 'allow'` is for bodies the gateway forwards rather than stores (a message's text is
 * the provider's to judge); everything else is refused with a NUL in any string.
 */
export function parseOr400<T extends z.ZodType>(
  schema: T,
  value: unknown,
  opts: { nul?: 'refuse' | 'allow' } = {},
): z.infer<T> {
  const nul = opts.nul === 'allow' ? null : nulPath(value);
  if (nul !== null)
    throw new GatewayError(
      'invalid_request_error',
      `${nul ? `${nul.replaceAll('\u0000', '\\u0000')}: ` : ''}must not contain NUL (\\u0000) characters.`,
    );
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new GatewayError('invalid_request_error', describeIssues(parsed.error));
  return parsed.data;
}

/** Refuses a path or query string carrying an encoded NUL (`%00`) before it can reach a query. */
export function refuseNulInUrl(): MiddlewareHandler {
  return async function refuseNulInUrl(c, next) {
    if (/%00/i.test(c.req.url))
      throw new GatewayError(
        'invalid_request_error',
        'The path and query parameters must not contain NUL (%00) characters.',
      );
    await next();
  };
}
