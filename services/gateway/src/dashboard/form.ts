import type { Context } from 'hono';
import { type FormFields, requestBody } from '../lib/request-body';

/**
 * A dashboard form's fields, through the body reader (a body that cannot be read as a form is
 * a 400 saying so, not a 500); `all`: repeated fields as arrays.
 */
export function readForm(c: Context, opts: { all?: boolean } = {}): Promise<FormFields> {
  return requestBody(c).form(opts);
}
