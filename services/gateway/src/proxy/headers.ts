import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

const DEFAULT_VERSION = '2023-06-01';

// Hop-by-hop headers, the client's credentials, and our own headers never travel upstream.
const NOT_FORWARDED = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'authorization',
  'x-api-key',
  'content-length',
  'accept-encoding',
  'cookie',
]);

const NOT_RETURNED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

/**
 * The headers a `Connection` header names, which are for this hop only and never forwarded
 * (RFC 9110 §7.6.1, https://www.rfc-editor.org/rfc/rfc9110#section-7.6.1, read 2026-11-29).
 * Null for the usual `keep-alive` or `close`, so the common call builds no set.
 */
function connectionNamed(value: string | string[] | undefined): Set<string> | null {
  if (value === undefined) return null;
  const text = Array.isArray(value) ? value.join(',') : value;
  if (text === 'keep-alive' || text === 'close') return null;
  const named = new Set<string>();
  for (const token of text.split(',')) {
    const name = token.trim().toLowerCase();
    if (name !== '') named.add(name);
  }
  return named;
}

/**
 * The headers sent upstream: the client's own (anthropic-*, x-stainless-*, user-agent, …) as
 * sent, with the account's provider key (null: another credential, set by the caller) in place
 * of the app key. Compression is declined so
 * the usage tap can read the answer; the client gets the same bytes either way.
 */
export function upstreamHeaders(
  incoming: IncomingHttpHeaders,
  providerKey: string | null,
  bodyLength: number | null,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const named = connectionNamed(incoming.connection);
  // for…in, not Object.entries: no pair arrays per header on every call.
  for (const name in incoming) {
    const value = incoming[name];
    if (value === undefined || NOT_FORWARDED.has(name) || name.startsWith('keygate-')) continue;
    if (named?.has(name)) continue;
    out[name] = value;
  }
  if (providerKey !== null) out['x-api-key'] = providerKey;
  out['anthropic-version'] ??= DEFAULT_VERSION;
  out['accept-encoding'] = 'identity';
  if (bodyLength !== null) out['content-length'] = String(bodyLength);
  return out;
}

/** The upstream's response headers as the client should see them, plus our request id. */
export function clientHeaders(
  upstream: Record<string, string | string[] | undefined>,
  requestId: string,
): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  const named = connectionNamed(upstream.connection);
  for (const name in upstream) {
    const value = upstream[name];
    if (value === undefined || NOT_RETURNED.has(name) || named?.has(name)) continue;
    out[name] = value;
  }
  out['keygate-request-id'] = requestId;
  out['request-id'] ??= requestId;
  return out;
}
