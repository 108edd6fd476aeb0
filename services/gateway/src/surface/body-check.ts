import type { Principal } from '../auth/resolver';
import { databaseUnavailable } from '../lib/database-unavailable';
import { databaseUnreachable, GatewayError } from '../lib/errors';
import { parseJson, readProxiedBody } from '../pipeline/body-reader';

import type { ForwardCall } from '../proxy/forward';
import type { JsonBody } from '../pipeline/json-body';
import type { ProxyOptions } from '../proxy/routes';
import { BODY_RULES, rulesFor, valuesAt, type BodyRules } from '../pipeline/body-rules';
import { fileRefs } from './file-refs';
import { homesApply, placeByFiles } from './object-home';
import { canSee, isObjectId, notFound, type Objects, type RefKind } from './ownership';

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

/**
 * Every object a body names (each `file_id`, and the endpoint's reference fields) must be one
 * the caller could read directly: otherwise the same 404 a GET of it answers, before the
 * provider sees the body (admins may name any). Then the call goes where the files it names
 * live (object-home.ts), read from the same rows.
 */
async function checkRefs(
  call: ForwardCall,
  proxy: ProxyOptions,
  objects: Objects,
  named: [RefKind, string][],
): Promise<void> {
  const p = call.principal;
  const admin = p.memberRole === 'admin';
  const placing = homesApply(p, proxy);
  if (admin && !placing) return;
  if (!admin)
    for (const [kind, id] of named)
      if (!isObjectId(id)) throw notFound(kind, id.replace(/[^\x21-\x7e]/g, '?'));
  const ids = [...new Set(named.map(([, id]) => id))].filter(isObjectId);
  const owners = await objects.owners(p.key.accountId, ids);
  const hidden = admin ? undefined : named.find(([, id]) => !canSee(p, owners.get(id)));
  if (hidden) throw notFound(...hidden);
  const files = named.filter(([kind]) => kind === 'file').map(([, id]) => id);
  if (placing) await placeByFiles(call, proxy, files, owners);
}

/** Both checks on a parsed body, by the endpoint's rules (body-rules.ts); then the call is placed. */
export async function checkBody(
  call: ForwardCall,
  proxy: ProxyOptions,
  objects: Objects,
  body: unknown,
): Promise<void> {
  const rules = rulesFor(call.endpoint);
  checkModels(call.principal, rules, body);
  const named = namedRefs(rules, body);
  if (named.length > 0) await checkRefs(call, proxy, objects, named);
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
  if (bytes.length > 0) await checkBody(call, proxy, objects, await parseJson(bytes));
}

/**
 * The hook `/v1/messages` and count_tokens call (proxy/routes.ts) with the body they parsed: the
 * references checked and the call placed as above. The walk reads the parsed keys, so a key
 * written with escapes (`"file\u005fid"`, which the provider reads as `file_id`) is found too.
 * Their `model` is checked there, with `max_tokens`.
 */
export function messageRefCheck(objects: Objects) {
  const rules = BODY_RULES['POST /v1/messages']!;
  return function checkFileRefs(
    call: ForwardCall,
    body: JsonBody,
    opts: ProxyOptions,
  ): Promise<void> | undefined {
    const p = call.principal;
    if (p.memberRole === 'admin' && !homesApply(p, opts)) return undefined;
    // Most calls name nothing: no promise, no turn of the event loop for them.
    const named = namedRefs(rules, body.value, (s) => body.text(s));
    if (named.length === 0) return undefined;
    return checkRefs(call, opts, objects, named).catch((error) => {
      // Whose objects they are is read from PostgreSQL: while it is unreachable, a 503 to retry.
      throw databaseUnavailable(error) ? databaseUnreachable('The objects this call refers to') : error;
    });
  };
}
