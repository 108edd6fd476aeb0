import type { Context, MiddlewareHandler } from 'hono';
import { z } from 'zod';
import { GatewayError } from './errors';
import { requestBody } from './request-body';
import { parseOr400 } from './validation';

/**
 * What one route of the account or operator API takes: the same zod schemas validate the
 * request (in `operation()`'s middleware) and describe it (in the OpenAPI document).
 */
export interface OperationSpec<
  Q extends z.ZodObject | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
> {
  summary: string;
  description?: string;
  tag: string;
  /** Every query parameter the route takes; any other is refused with a 400 naming it. */
  query?: Q;
  /** Query parameters another API takes and this one cannot honour, with the reason the 400 gives. */
  refused?: Record<string, string>;
  body?: B;
  /** An absent or empty body reads as `{}` (a rotation with no options). */
  optionalBody?: boolean;
  /** The success status, when it is not 200. */
  status?: 200 | 201;
}

type Out<Q, B> = (Q extends z.ZodType ? { query: z.output<Q> } : {}) &
  (B extends z.ZodType ? { json: z.output<B> } : {});

const SPECS = new WeakMap<object, OperationSpec<z.ZodObject | undefined, z.ZodType | undefined>>();

/** The spec an `operation()` middleware was made from, or undefined for any other handler. */
export function specOf(
  handler: object,
): OperationSpec<z.ZodObject | undefined, z.ZodType | undefined> | undefined {
  return SPECS.get(handler);
}

/** Query parameters whose schema is an array: sent as `name[]=a&name[]=b` (the provider's style) or repeated. */
export function arrayParams(schema: z.ZodObject | undefined): string[] {
  if (!schema) return [];
  return Object.entries(schema.shape)
    .filter(([, s]) => unwrap(s as z.ZodType) instanceof z.ZodArray)
    .map(([name]) => name);
}

function unwrap(s: z.ZodType): z.ZodType {
  let t = s;
  while (t instanceof z.ZodOptional || t instanceof z.ZodDefault || t instanceof z.ZodNullable)
    t = t.unwrap() as z.ZodType;
  return t;
}

/**
 * The query string as an object for zod: `name[]=a&name[]=b` and repeated `name=a&name=b`
 * both become `name: ['a', 'b']` for array parameters (comma-separated values too).
 */
export function queryObject(c: Context, arrays: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = { ...c.req.query() };
  if (sdkBetaMarker(c)) delete out.beta;
  for (const name of arrays) {
    delete out[`${name}[]`];
    const values = [...(c.req.queries(`${name}[]`) ?? []), ...(c.req.queries(name) ?? [])]
      .flatMap((v) => v.split(','))
      .filter(Boolean);
    if (values.length) out[name] = values;
    else delete out[name];
  }
  return out;
}

/**
 * `?beta=true`: the official SDK's beta namespace marks its calls so (0.x calls the organization
 * API from `client.beta.organization`, read 2026-11-29 in its resources/beta/organization/*.ts);
 * it names no parameter of the route and is taken on every route.
 */
function sdkBetaMarker(c: Context): boolean {
  const values = c.req.queries('beta');
  return values?.length === 1 && values[0] === 'true';
}

/** An object's top-level keys renamed by `names` (new to old); anything else as it is. */
function renamed<T>(value: T, names: Record<string, string> | undefined): T {
  if (!names || value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [names[k] ?? k, v])) as T;
}

function refuseUnknownParams(
  c: Context,
  known: readonly string[],
  arrays: readonly string[],
  refused: Record<string, string>,
  names: Record<string, string> = {},
): void {
  const bare = (n: string) => (n.endsWith('[]') ? n.slice(0, -2) : n);
  const old = (n: string) => (names[bare(n)] ?? bare(n)) + (n.endsWith('[]') ? '[]' : '');
  const unknown = Object.keys(c.req.queries()).filter(
    (n) =>
      !(n === 'beta' && sdkBetaMarker(c)) &&
      !known.includes(old(n)) &&
      !(n.endsWith('[]') && arrays.includes(bare(old(n)))),
  );
  if (unknown.length === 0) return;
  const named = unknown.find((n) => refused[bare(n)]);
  if (named) throw new GatewayError('invalid_request_error', `${bare(named)}: ${refused[bare(named)]}.`);
  const takes = known.length ? `it takes ${known.join(', ')}` : 'it takes none';
  const list = unknown.map((n) => `'${n}'`).join(', ');
  throw new GatewayError(
    'invalid_request_error',
    `Unknown query parameter${unknown.length > 1 ? 's' : ''} ${list} for ${c.req.method} ${c.req.path}: ${takes}.`,
  );
}

/**
 * A route's validating middleware, remembered with its spec so the OpenAPI document can be
 * read off the app's route table. Handlers read the parsed values with `c.req.valid(…)`.
 */
// `any` environment, as Hono's own validator: the middleware fits any app's routes.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyEnv = any;

export function operation<
  Q extends z.ZodObject | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(spec: OperationSpec<Q, B>): MiddlewareHandler<AnyEnv, string, { out: Out<Q, B> }> {
  const arrays = arrayParams(spec.query);
  const known = spec.query ? Object.keys(spec.query.shape) : [];
  const validate: MiddlewareHandler<AnyEnv, string, { out: Out<Q, B> }> = async function validate(c, next) {
    // A later API version's field names, read as the ones the spec names (account-api/api-version.ts).
    const names = c.get('inputNames') as Record<string, string> | undefined;
    refuseUnknownParams(c, known, arrays, spec.refused ?? {}, names);
    if (spec.query)
      c.req.addValidatedData(
        'query',
        parseOr400(spec.query, renamed(queryObject(c, arrays), names)) as object,
      );
    if (spec.body) {
      // Read by the route family's body reader, within its bounds (pipeline/body-reader.ts).
      const value = await requestBody(c).json({ optional: spec.optionalBody ?? false });
      c.req.addValidatedData(
        'json',
        parseOr400(spec.body, value === undefined ? {} : renamed(value, names)) as object,
      );
    } else if (c.req.method !== 'GET' && c.req.method !== 'HEAD' && c.get('body')) {
      // No body taken, yet one may be sent: read within the bounds first, so a chunked body past
      // them is refused (413) rather than ignored while the operation acts (billing/cancel did).
      await requestBody(c).consume();
    }
    await next();
  };
  SPECS.set(validate, spec);
  return validate;
}
