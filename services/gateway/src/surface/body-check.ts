import type { Principal } from '../auth/resolver';
import { databaseUnavailable } from '../lib/database-unavailable';
import { databaseUnreachable, GatewayError } from '../lib/errors';
import { parseJson, readProxiedBody } from '../pipeline/body-reader';

import type { ForwardCall } from '../proxy/forward';
import type { JsonBody } from '../pipeline/json-body';
import type { ProxyOptions } from '../proxy/routes';
import { BODY_RULES, rulesFor, valuesAt, type BodyRules } from '../pipeline/body-rules';
import { fileRefs } from './file-refs';
import { isObjectId, notFound, visibleIds, type Objects, type RefKind } from './ownership';

/**
 * Every model a body names is held to the caller's model policy, as `/v1/messages`' `model` is
 * (admission's `permit`): the same 400, its message naming the field.
 */
export function checkModels(p: Principal, rules: BodyRules, body: unknown): void {
  if (!p.policy) return;
  for (const field of rules.models)
    for (const { value, where } of valuesAt(body, field)) {
      const refused = p.policy.check(value, null);
      // The policy's message names `model`; here it names the field where the model was found.
      if (refused)
        throw new GatewayError('invalid_request_error', `${where}${refused.slice('model'.length)}`);
    }
}

/**
 * Every object a body names (each `file_id`, and the endpoint's reference fields) must be one
 * the caller could read directly: otherwise the same 404 a GET of it answers, before the
 * provider sees the body.
 */
export async function checkReferences(
  objects: Objects,
  p: Principal,
  rules: BodyRules,
  body: unknown,
): Promise<void> {
  if (p.memberRole === 'admin') return;
  const named = namedRefs(rules, body);
  if (named.length > 0) await assertVisibleRefs(objects, p, named);
}

/** The objects a body names, by the endpoint's rules; `text` reads a parsed string as its value. */
function namedRefs(
  rules: BodyRules,
  body: unknown,
  text: (s: string) => string = (s) => s,
): [RefKind, string][] {
  const named: [RefKind, string][] = fileRefs(body, text).map((id) => ['file', id]);
  for (const rule of rules.refs)
    for (const { value, holder } of valuesAt(body, rule.at))
      if (rule.unlessType === undefined || holder.type !== rule.unlessType)
        named.push([rule.kind, text(value)]);
  return named;
}

async function assertVisibleRefs(objects: Objects, p: Principal, named: [RefKind, string][]): Promise<void> {
  for (const [kind, id] of named) if (!isObjectId(id)) throw notFound(kind, id.replace(/[^\x21-\x7e]/g, '?'));
  const visible = await visibleIds(objects, p, [...new Set(named.map(([, id]) => id))]);
  const hidden = named.find(([, id]) => !visible.has(id));
  if (hidden) throw notFound(...hidden);
}

/** Both checks on a parsed body, by the endpoint's rules (body-rules.ts). */
export async function checkBody(
  objects: Objects,
  p: Principal,
  endpoint: string,
  body: unknown,
): Promise<void> {
  const rules = rulesFor(endpoint);
  checkModels(p, rules, body);
  await checkReferences(objects, p, rules, body);
}

/** Uploads stream through unread: they carry files, not fields. */
const UPLOAD = /^\s*(multipart\/|application\/octet-stream)/i;

/**
 * Reads a surface call's body (bounded like a messages body), checks it, and sends the bytes read
 * in place of the stream. A body that is not JSON is refused as `/v1/messages` refuses one.
 */
export async function readChecked(call: ForwardCall, proxy: ProxyOptions, objects: Objects): Promise<void> {
  if (!call.upload || UPLOAD.test(String(call.req.headers['content-type'] ?? ''))) return;
  const bytes = await readProxiedBody(call.req, {
    limit: proxy.maxBodyBytes,
    idleMs: proxy.bodyIdleMs ?? 30_000,
  });
  call.upload = null;
  call.body = bytes;
  if (bytes.length > 0) await checkBody(objects, call.principal, call.endpoint, await parseJson(bytes));
}

/**
 * The hook `/v1/messages` and count_tokens call (proxy/routes.ts) with the body they parsed. The
 * walk reads the parsed keys, so a key written with escapes (`"file\u005fid"`, which the provider
 * reads as `file_id`) is found too. Their `model` is checked there, with `max_tokens`.
 */
export function messageRefCheck(objects: Objects) {
  const rules = BODY_RULES['POST /v1/messages']!;
  return function checkRefs(p: Principal, body: JsonBody): Promise<void> | undefined {
    if (p.memberRole === 'admin') return undefined;
    // Most calls name nothing: no promise, no turn of the event loop for them.
    const named = namedRefs(rules, body.value, (s) => body.text(s));
    if (named.length === 0) return undefined;
    return assertVisibleRefs(objects, p, named).catch((error) => {
      // Whose objects they are is read from PostgreSQL: while it is unreachable, a 503 to retry.
      throw databaseUnavailable(error) ? databaseUnreachable('The objects this call refers to') : error;
    });
  };
}
