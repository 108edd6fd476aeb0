import aws4 from 'aws4';
import type { Dispatcher } from 'undici';
import type { OutgoingCall, UpstreamAttempt, UpstreamRequest } from '../proxy/forward';
import { upstreamRequest, type UpstreamRules } from '../proxy/upstream-request';
import type { GoogleTokenSource } from './google-token';
import { awsCredentials, RULES } from './kinds';
import type { UpstreamRow } from './queries';

/** An upstream as a call uses it: its row with the credential opened. */
export interface OpenUpstream extends Omit<UpstreamRow, 'credentialSealed'> {
  credential: string;
}

/**
 * How a call goes to one of the account's upstreams: its base URL's path before the provider's
 * path, its own auth, the workspace header, the model id it knows the model by, and without the
 * betas and top-level fields it refuses. Everything else (cache_control and its TTLs, the cache
 * betas, the client's other headers) reaches it as sent.
 */
export function upstreamAttempt(
  u: OpenUpstream,
  dispatcher: Dispatcher,
  next: UpstreamAttempt | null,
  tokens: GoogleTokenSource | null = null,
): UpstreamAttempt {
  const url = new URL(u.baseUrl);
  const prefix = url.pathname.replace(/\/+$/, '');
  const aws = u.auth === 'sigv4' ? awsCredentials(u.credential) : null;
  const rules: UpstreamRules = {
    // SigV4 signs below; a Google access token is set once minted (withToken).
    auth: u.auth === 'sigv4' || u.auth === 'google-service-account' ? 'signed' : u.auth,
    credential: u.credential,
    pathPrefix: prefix,
    refusedBetas: new Set(u.refusedBetas),
    workspaceId: u.workspaceId,
  };
  const attempt: UpstreamAttempt = {
    label: u.id,
    providerKey: false,
    origin: url.origin,
    dispatcher,
    next,
    request(call: OutgoingCall): UpstreamRequest | Promise<UpstreamRequest> {
      const { body, mapped } = rewriteBody(call, u);
      const out = upstreamRequest(
        call.req.headers,
        call.path,
        body,
        body?.length ?? call.upload?.length ?? null,
        rules,
      );
      if (aws)
        sign(
          out.headers,
          {
            host: url.host,
            path: out.path,
            method: call.req.method ?? 'POST',
            body,
            region: u.region,
            kind: u.kind,
          },
          aws,
        );
      const ready = { ...out, mapped };
      return tokens ? withToken(ready, tokens) : ready;
    },
  };
  if (!tokens) return attempt;
  // A 401 to a minted token: dropped, and the call tried once more with a new one.
  return {
    ...attempt,
    refused(out) {
      if (out.token) tokens.drop(out.token);
      return attempt;
    },
  };
}

function withToken(
  out: UpstreamRequest,
  tokens: GoogleTokenSource,
): UpstreamRequest | Promise<UpstreamRequest> {
  const bearer = (token: string) => {
    out.headers.authorization = `Bearer ${token}`;
    out.token = token;
    return out;
  };
  const t = tokens.token();
  return typeof t === 'string' ? bearer(t) : t.then(bearer);
}

/** The account's provider key as the first of its upstreams (today's one upstream). */
export function providerKeyAttempt(
  baseUrl: string,
  apiKey: string,
  dispatcher: Dispatcher,
  next: UpstreamAttempt | null,
): UpstreamAttempt {
  const rules: UpstreamRules = { auth: 'x-api-key', credential: apiKey };
  return {
    label: 'provider_key',
    providerKey: true,
    origin: baseUrl,
    dispatcher,
    next,
    request: (call) => ({
      ...upstreamRequest(
        call.req.headers,
        call.path,
        call.body,
        call.body?.length ?? call.upload?.length ?? null,
        rules,
      ),
      mapped: false,
    }),
  };
}

/**
 * The body as this upstream takes it. Untouched (the same buffer) unless the upstream knows the
 * call's model by another id or refuses one of its top-level fields; then the body, already read
 * and bounded by validate.ts, is parsed and written again with only those changed.
 */
function rewriteBody(call: OutgoingCall, u: OpenUpstream): { body: Buffer | null; mapped: boolean } {
  const body = call.body;
  if (body === null || body.length === 0) return { body, mapped: false };
  const target = call.model ? u.modelMap[call.model] : undefined;
  if (target === undefined && u.refusedFields.length === 0) return { body, mapped: false };
  const json = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
  let changed = false;
  for (const field of u.refusedFields) {
    if (field in json) {
      delete json[field];
      changed = true;
    }
  }
  if (target !== undefined) {
    json.model = target;
    changed = true;
  }
  return changed
    ? { body: Buffer.from(JSON.stringify(json)), mapped: target !== undefined }
    : { body, mapped: false };
}

interface Signed {
  host: string;
  path: string;
  method: string;
  body: Buffer | null;
  region: string | null;
  kind: OpenUpstream['kind'];
}

/**
 * SigV4 through aws4 (a small, dependency-free signer the AWS SDK's own tests compare against):
 * every header sent is signed, and the Host it signs is the one undici sends from the origin.
 */
function sign(
  headers: Record<string, string | string[]>,
  r: Signed,
  creds: { accessKeyId: string; secretAccessKey: string; sessionToken?: string },
): void {
  const flat: Record<string, string> = {};
  for (const name in headers) {
    const v = headers[name]!;
    flat[name] = Array.isArray(v) ? v.join(',') : v;
  }
  const req = {
    host: r.host,
    path: r.path,
    method: r.method,
    service: RULES[r.kind].service ?? 'execute-api',
    region: r.region ?? 'us-east-1',
    headers: flat,
    body: r.body ?? undefined,
  };
  aws4.sign(req, creds);
  for (const name in req.headers) {
    if (name.toLowerCase() === 'host') continue;
    headers[name.toLowerCase()] = req.headers[name]!;
  }
}
