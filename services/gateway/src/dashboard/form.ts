import type { Context } from 'hono';
import { GatewayError } from '../lib/errors';

/**
 * A dashboard form's fields. A body that cannot be read as a form (multipart without its
 * boundary, a broken multipart body) is the sender's mistake: a 400 saying so, not a 500.
 */
export async function readForm(c: Context): Promise<Record<string, string | File | (string | File)[]>> {
  try {
    return await c.req.parseBody();
  } catch {
    throw new GatewayError(
      'invalid_request_error',
      'This form could not be read: send it as application/x-www-form-urlencoded, or as multipart/form-data with its boundary.',
    );
  }
}
