import type { Context } from 'hono';
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

export function parseOr400<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new GatewayError('invalid_request_error', describeIssues(parsed.error));
  return parsed.data;
}

/** Parses a JSON request body against a schema; bad JSON or bad fields answer 400 in the provider's shape. */
export async function jsonBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  let value: unknown;
  try {
    value = await c.req.json();
  } catch {
    throw new GatewayError('invalid_request_error', 'Request body is not valid JSON.');
  }
  return parseOr400(schema, value);
}
