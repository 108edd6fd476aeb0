import { BODY_LIMITS } from '../lib/body-limit';
import type { BodySpec } from './body-reader';
import { BODY_RULES, rulesFor, type BodyRules, type Field, type RefField, type RefKind } from './body-rules';

const NO_RULES: BodyRules = { models: [], refs: [] };

/** The shape every answer of an endpoint takes, errors included (lib/errors.ts renders each). */
export type Face =
  /** The provider's JSON and its error object (`{type: 'error', error: {type, message}}`). */
  | 'provider'
  /** Bedrock's runtime API: `{"message"}` errors named by `x-amzn-ErrorType` (cloud-fronts/bedrock-answer.ts). */
  | 'bedrock'
  /** SCIM 2.0 resources and `urn:ietf:params:scim:api:messages:2.0:Error`. */
  | 'scim'
  /** OTLP/HTTP: the provider's error object, as Claude Code's exporter reads any JSON. */
  | 'otlp'
  /** HTML pages and redirects (the dashboard, the API reference). */
  | 'page'
  /** Probes: `/healthz`, `/readyz`, empty answers. */
  | 'probe'
  /** An OAuth token endpoint: RFC 6749 §5.2's `{error, error_description}`. */
  | 'oauth';

/** What a caller presents. An endpoint takes any one of those it lists. */
export type Credential =
  | 'none'
  | 'app-key'
  | 'admin-key'
  | 'operator-token'
  | 'dashboard-session'
  | 'scim-token'
  /** A device code or refresh token the account's identity provider issued (in the body). */
  | 'idp-grant'
  /** A workload's signed JWT (RFC 7523), in the body: federation/token-routes.ts. */
  | 'jwt-assertion'
  | 'stripe-signature';

/**
 * What an endpoint takes as its body. `reader`: the one body reader's spec, mounted from this row
 * (routes take it from here: see BODIES). `proxied`: a JSON body read by the proxy's streaming
 * reader under KEYGATE_MAX_BODY_BYTES and checked by its rules (surface/body-check.ts).
 * `upload`: a multipart upload streamed to the provider under KEYGATE_MAX_FILE_BYTES, never held.
 */
export type EndpointBody =
  | { kind: 'none' }
  | { kind: 'reader'; spec: BodySpec }
  | { kind: 'proxied' }
  | { kind: 'upload' };

/** A path parameter that names an object, and whose it must be. */
export interface PathRef {
  param: string;
  /** An account object (`user`, `api_key`…), or one of the provider's the caller must see. */
  kind: RefKind | AccountObject;
  /** `account`: another account's id is not found; `member`: another member's too (the proxy's objects). */
  owner: 'account' | 'member';
}

/** An object of the caller's account (`user`, `api_key`, `rbac_group`…): another account's is not found. */
export type AccountObject = string;

export type BodyRef = Omit<RefField, 'kind'> & { kind: RefKind | AccountObject };

/** Which limits a call of the endpoint is held to before it runs. */
export type Limits =
  /** Admission: billing standing, rate limits, budgets, spend limits, model policy (admission/). */
  | 'per-call'
  /** Per client address (sign-in floods, wrong operator tokens). */
  | 'per-address'
  | 'none';

/** How an answered call is recorded. */
export type Recording = 'call-log' | 'audit' | 'none';

export interface Endpoint {
  method: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'ALL';
  /** Hono's path pattern, exactly as the route is registered. */
  path: string;
  face: Face;
  credentials: readonly Credential[];
  body: EndpointBody;
  pathRefs: readonly PathRef[];
  /** Fields of the body naming an object (pipeline/body-rules.ts for the provider's endpoints). */
  bodyRefs: readonly BodyRef[];
  /** Fields of the body naming a model, each held to the caller's model policy. */
  models: readonly Field[];
  limits: Limits;
  recording: Recording;
}

/** The body reader's spec of each route family: the route mounts it from here. */
export const BODIES = {
  api: { kind: 'json', maxBytes: BODY_LIMITS.api },
  idp: { kind: 'json', maxBytes: BODY_LIMITS.idp },
  /** Claude Code's gateway sign-in: RFC 8628's device authorization and token requests, a form of a few fields. */
  claudeOauth: { kind: 'form', maxBytes: BODY_LIMITS.idp },
  /** RFC 7523's token request: a form (or the SDK's JSON) holding one JWT. */
  workloadToken: { kind: 'form', maxBytes: 32 * 1024, idleMs: 10_000 },
  signIn: { kind: 'form', maxBytes: BODY_LIMITS.signIn },
  dashboardForm: { kind: 'form', maxBytes: BODY_LIMITS.dashboardForm },
  stripeWebhook: { kind: 'bytes', maxBytes: BODY_LIMITS.stripeWebhook },
  otlp: { kind: 'gzip-able', maxBytes: BODY_LIMITS.otlp, maxInflated: BODY_LIMITS.otlpInflated },
  batch: {
    kind: 'json',
    maxBytes: BODY_LIMITS.batch,
    tooLarge: `A batch through Keygate is at most ${BODY_LIMITS.batch / 1024 / 1024} MiB: send its requests in several batches.`,
  },
} as const satisfies Record<string, BodySpec>;

type Method = Endpoint['method'];
type Defaults = Omit<Endpoint, 'method' | 'path' | 'pathRefs' | 'bodyRefs' | 'models' | 'body'> & {
  /** The body of the family's writes (its reads take none). */
  writes: EndpointBody;
  /** The kind of object each `:param` names, by the collection it follows. */
  objects?: (collection: string, param: string) => PathRef | null;
};

/**
 * Rows of one route family, from `METHOD /path` lines. Reads take no body, writes the family's;
 * a write's model and reference fields are its entry in BODY_RULES (pipeline/body-rules.ts).
 */
export function family(defaults: Defaults, lines: readonly string[], prefix = ''): Endpoint[] {
  const { writes, objects, ...rest } = defaults;
  return lines.map((line) => {
    const [method, suffix = ''] = line.split(' ') as [Method, string];
    const path = prefix + suffix;
    const reads = method === 'GET' || method === 'HEAD';
    const key = `${method} ${template(path)}`;
    // A proxied body is checked by its entry, or as an unknown endpoint's (a top-level model).
    const rules = reads
      ? NO_RULES
      : writes.kind === 'proxied'
        ? rulesFor(key)
        : (BODY_RULES[key] ?? NO_RULES);
    return {
      ...rest,
      method,
      path,
      body: reads ? { kind: 'none' } : writes,
      // The audit log holds changes: a family's reads leave none.
      recording: reads && rest.recording === 'audit' ? 'none' : rest.recording,
      pathRefs: objects ? pathRefs(path, objects) : [],
      bodyRefs: rules.refs,
      models: rules.models,
    };
  });
}

/** `/v1/agents/:id/*` → `/v1/agents/{id}/*`: the key BODY_RULES uses (surface/call.ts pathTemplate). */
export const template = (path: string) => path.replace(/:([a-z_]+)(\{[^}]*\})?/g, '{$1}');

function pathRefs(path: string, objects: NonNullable<Defaults['objects']>): PathRef[] {
  const out: PathRef[] = [];
  const parts = path.split('/');
  for (const [i, part] of parts.entries()) {
    if (!part.startsWith(':')) continue;
    const ref = objects(parts[i - 1] ?? '', part.slice(1).replace(/\{.*$/, ''));
    if (ref) out.push(ref);
  }
  return out;
}

/** The endpoint's key in the table and in failure messages. */
export const endpointKey = (e: { method: string; path: string }): string => `${e.method} ${e.path}`;
