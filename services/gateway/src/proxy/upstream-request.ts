import type { IncomingHttpHeaders } from 'node:http';
import { upstreamHeaders } from './headers';

/** How an upstream takes its credential; `signed`: none here, the caller signs the request (SigV4). */
export type UpstreamAuth = 'x-api-key' | 'bearer' | 'signed';

/** What one upstream asks of every request sent to it. */
export interface UpstreamRules {
  auth: UpstreamAuth;
  /** The account's credential for it (opened; never the client's). */
  credential: string;
  /** Its base URL's path, put before the provider's path. */
  pathPrefix?: string;
  /** `anthropic-beta` values it refuses: removed from the request. */
  refusedBetas?: ReadonlySet<string> | null;
  /** Sent as `anthropic-workspace-id` (Claude Platform on AWS). */
  workspaceId?: string | null;
}

export interface BuiltRequest {
  path: string;
  headers: Record<string, string | string[]>;
  body: Buffer | null;
}

/**
 * The one builder of a request to an upstream, for every endpoint family (messages, the
 * provider surface, files, the passthrough): the client's headers without hop-by-hop ones,
 * those its `Connection` names, its credentials and Keygate's own; the upstream's credential;
 * its refused betas removed and its workspace named; the body's length.
 */
export function upstreamRequest(
  incoming: IncomingHttpHeaders,
  path: string,
  body: Buffer | null,
  bodyLength: number | null,
  rules: UpstreamRules,
): BuiltRequest {
  const headers = upstreamHeaders(incoming, rules.auth === 'x-api-key' ? rules.credential : null, bodyLength);
  if (rules.auth === 'bearer') headers.authorization = `Bearer ${rules.credential}`;
  if (rules.refusedBetas && rules.refusedBetas.size > 0) dropBetas(headers, rules.refusedBetas);
  if (rules.workspaceId) headers['anthropic-workspace-id'] = rules.workspaceId;
  return { path: rules.pathPrefix ? rules.pathPrefix + path : path, headers, body };
}

function dropBetas(headers: Record<string, string | string[]>, refused: ReadonlySet<string>): void {
  const raw = headers['anthropic-beta'];
  if (raw === undefined) return;
  const kept = (Array.isArray(raw) ? raw.join(',') : raw)
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b !== '' && !refused.has(b));
  if (kept.length > 0) headers['anthropic-beta'] = kept.join(',');
  else delete headers['anthropic-beta'];
}
