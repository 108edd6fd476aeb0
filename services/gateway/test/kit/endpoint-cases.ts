import { z } from 'zod';
import type { Endpoint, PathRef } from '../../src/pipeline/endpoint-row';
import { specOf } from '../../src/lib/operation';
import { appForRouteTable } from './route-table';

/** The credentials of one caller, one of each kind a row may take. */
export interface Caller {
  appKey: string;
  adminKey: string;
  operatorToken: string;
  scimToken: string;
  /** The dashboard session's cookie and CSRF token. */
  session: { cookie: string; csrf: string };
  /** The caller's account (operator paths name it). */
  accountId: string;
  /** The account of the app key (Claude Code's base names it). */
  appAccountId: string;
}

/** Ids that fill a path: by the kind a parameter names, the caller's own (or made up). */
export type Ids = (ref: PathRef) => string;

export interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

const NUL = 'a\u0000b';
export const FOREIGN_MODEL = 'claude-opus-4-5';

/** The row's path with every parameter filled: references from `ids`, the rest plausible. */
export function concrete(row: Endpoint, caller: Caller, ids: Ids, nul = false): string {
  const path = row.path.replace(/^ALL /, '').replace(/\/\*$/, '/x');
  return path.replace(/:([a-z_]+)(\{[^}]*\})?/g, (_m, param: string) => {
    // Claude Code's base names the caller's account: another one (a NUL too) is refused before
    // anything else. Its OAuth rows take no key: they name the account without an identity
    // provider here, whose answer needs no provider on the network.
    if (param === 'account')
      return row.credentials.includes('app-key') ? caller.appAccountId : caller.accountId;
    if (nul) return encodeURIComponent(NUL);
    // The cloud fronts name a model in the path, as their clouds spell it.
    if (param === 'model_id') return encodeURIComponent('anthropic.claude-haiku-4-5-20251001-v1:0');
    if (param === 'model') return `${encodeURIComponent('claude-haiku-4-5@20251001')}:rawPredict`;
    if (param === 'account_id') return caller.accountId;
    if (param === 'plan_id') return 'team';
    if (param === 'file') return 'inv_0000000000.html';
    const ref = row.pathRefs.find((r) => r.param === param);
    return ref ? encodeURIComponent(ids(ref)) : 'x';
  });
}

/** The headers that present the row's first credential, and its body's type. */
export function credentialHeaders(row: Endpoint, caller: Caller, base: string): Record<string, string> {
  const headers: Record<string, string> = {};
  const credential = row.credentials[0];
  if (credential === 'app-key') headers['x-api-key'] = caller.appKey;
  if (credential === 'admin-key') headers['x-api-key'] = caller.adminKey;
  if (credential === 'operator-token') headers.authorization = `Bearer ${caller.operatorToken}`;
  if (credential === 'scim-token') headers.authorization = `Bearer ${caller.scimToken}`;
  if (credential === 'dashboard-session') {
    headers.cookie = caller.session.cookie;
    headers.origin = base;
  }
  if (credential === 'stripe-signature') headers['stripe-signature'] = 't=1,v1=00';
  if (row.path.startsWith('/dashboard')) headers.origin = base;
  return headers;
}

const isForm = (row: Endpoint) => row.body.kind === 'reader' && row.body.spec.kind === 'form';

/** A body of the row's kind from fields: JSON, or a form (with the session's CSRF token). */
export function encode(
  row: Endpoint,
  caller: Caller,
  fields: Record<string, unknown>,
): Sent['body'] & string {
  if (!isForm(row)) return JSON.stringify(fields);
  const form = new URLSearchParams({ _csrf: caller.session.csrf });
  for (const [k, v] of Object.entries(fields)) form.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  return form.toString();
}

export const contentType = (row: Endpoint) =>
  isForm(row) ? 'application/x-www-form-urlencoded' : 'application/json';

/** `value` placed at a field of BODY_RULES' syntax (`requests[].params.model`), in a new or given object. */
export function place(
  field: string,
  value: unknown,
  into: Record<string, unknown> = {},
): Record<string, unknown> {
  const keys = field.split('.');
  let at: Record<string, unknown> = into;
  for (const [i, key] of keys.entries()) {
    const last = i === keys.length - 1;
    const list = key.endsWith('[]');
    const name = list ? key.slice(0, -2) : key;
    const leaf = last ? value : {};
    if (list) {
      const items = (Array.isArray(at[name]) ? at[name] : (at[name] = [])) as unknown[];
      if (items.length === 0) items.push(leaf);
      if (last) items[0] = leaf;
      at = items[0] as Record<string, unknown>;
    } else {
      if (last || typeof at[name] !== 'object' || at[name] === null) at[name] = leaf;
      at = at[name] as Record<string, unknown>;
    }
  }
  return into;
}

const unwrap = (s: z.ZodType): z.ZodType => {
  let t = s;
  while (t instanceof z.ZodOptional || t instanceof z.ZodDefault || t instanceof z.ZodNullable)
    t = t.unwrap() as z.ZodType;
  return t;
};

/** The string fields of each account and operator route's body schema (lib/operation.ts), by `METHOD path`. */
export const SCHEMA_STRINGS: ReadonlyMap<string, string[]> = new Map(
  appForRouteTable().routes.flatMap((r) => {
    const body = specOf(r.handler)?.body;
    if (!(body instanceof z.ZodObject)) return [];
    const strings = Object.entries(body.shape as Record<string, z.ZodType>)
      .filter(([, s]) => {
        const t = unwrap(s);
        return t instanceof z.ZodString || t instanceof z.ZodEmail || t instanceof z.ZodEnum;
      })
      .map(([name]) => name);
    return [[`${r.method} ${r.path}`, strings] as const];
  }),
);

/** Every string field a row's body is known to take: its schema's, its models and references, and a name. */
export function stringFields(row: Endpoint): string[] {
  const known = SCHEMA_STRINGS.get(`${row.method} ${row.path}`) ?? [];
  const generic = row.path.startsWith('/scim/')
    ? ['userName', 'displayName', 'externalId']
    : ['name', 'description'];
  return [...new Set([...known, ...row.models, ...row.bodyRefs.map((r) => r.at), ...generic])];
}

const isMessages = (row: Endpoint) => row.path === '/v1/messages' || row.path === '/v1/messages/count_tokens';

/** A body a provider row's provider would take, with `fill` in each string it holds. */
export function nulBody(row: Endpoint): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const fields = stringFields(row);
  // `model` and `model.id` name one thing two ways: the string form is sent.
  for (const field of fields) if (!fields.some((f) => field.startsWith(`${f}.`))) place(field, NUL, body);
  if (isMessages(row)) Object.assign(body, { max_tokens: 8, messages: [{ role: 'user', content: NUL }] });
  if (row.path.startsWith('/scim/')) body.schemas = ['urn:ietf:params:scim:schemas:core:2.0:User'];
  return body;
}

export { NUL };
