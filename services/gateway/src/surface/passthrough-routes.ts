import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono, type Context } from 'hono';
import type { AppEnv } from '../app-env';
import { keyAuth } from '../auth/middleware';
import { GatewayError } from '../lib/errors';
import { forward } from '../proxy/forward';
import type { ProxyOptions } from '../proxy/routes';
import { readChecked } from './body-check';
import { refusedRecord } from '../lib/call-record';
import { admitOrThrow, decoded, pathTemplate, recordGone, surfaceCall } from './call';
import type { Objects } from './ownership';

/**
 * Every other `/v1/…` path, forwarded as sent (method, path, query, headers, body; the answer
 * streamed back) with the account's provider key, so an endpoint the provider ships tomorrow
 * works the same day. A JSON body is read first and checked as the known endpoints' are
 * (body-check.ts: a top-level `model`, every `file_id`); uploads stream. What never leaves is
 * `forwardable`'s. `served(path)` says whether Keygate has routes of its own at a path; those,
 * and the account API, get `notFound`.
 */
export function passthroughRoutes(
  opts: ProxyOptions,
  objects: Objects,
  served: (path: string) => boolean,
  notFound: (c: Context<AppEnv>) => Response,
): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const auth = keyAuth(opts.resolver, ['live', 'test']);
  app.all(
    '/v1/*',
    async function ownPaths(c, next) {
      // Keygate's own paths answer as if this route were not here (404, or 405 with allow).
      const path = c.req.path;
      if (served(path) || path === '/v1/organizations' || path.startsWith('/v1/organizations/'))
        return notFound(c);
      await next();
    },
    auth,
    async function passthrough(c) {
      const path = c.req.path;
      const call = surfaceCall(c, opts, pathTemplate(c.req.method, path), path);
      // A path that is not plainly one (empty or dot segments, encoded slashes) or that names the
      // account API or vaults is not forwarded with the account's key: it answers the provider's 404.
      if (!forwardable(path)) {
        const err = new GatewayError('not_found_error', `Not found: ${c.req.method} ${path}`);
        opts.record(refusedRecord(call, err));
        throw err;
      }
      try {
        await admitOrThrow(opts, call.principal, call.endpoint);
        await readChecked(call, opts, objects);
      } catch (err) {
        if (recordGone(call, opts, err)) return RESPONSE_ALREADY_SENT;
        if (err instanceof GatewayError) opts.record(refusedRecord(call, err));
        throw err;
      }
      await forward(call, opts);
      return RESPONSE_ALREADY_SENT;
    },
  );
  return app;
}

/**
 * The first segment after `/v1` of what the provider must never get with the account's key:
 * the Admin API (Keygate's own account API answers there) and vaults, which hold credentials
 * that sessions use on the account's behalf.
 */
const NEVER_FORWARDED = new Set(['organizations', 'vaults']);

/**
 * Object families Keygate owns (surface/): their endpoints are its own routes, and a path under
 * them it does not serve could name another member's object, so it is not forwarded either.
 */
const OWNED = /^(files|skills|sessions|agents|environments|messages\/batches)(\/|$)/;

// One segment as the provider may read it: visible ASCII (slashes, backslashes and `%` are refused below).
const SEGMENT = /^[\x21-\x7e]+$/;

/**
 * Whether a path is forwarded: every segment non-empty, not a dot segment, decoding to one
 * segment (no encoded slash), and not under a path that never leaves Keygate or a family it
 * owns, in any spelling (case, percent-encoding, matrix parameters `;x`).
 */
export function forwardable(path: string): boolean {
  const segments = path.split('/').slice(1);
  if (segments[0] !== 'v1' || segments.length < 2) return false;
  for (const raw of segments.slice(1)) {
    const plain = decoded(raw);
    if (!SEGMENT.test(plain) || /[/\\%]/.test(plain) || /^\.\.?$/.test(plain)) return false;
  }
  // The names of the first two segments as a lenient server might read them.
  const names = segments.slice(1, 3).map(
    (raw) =>
      decoded(raw)
        .toLowerCase()
        .split(/[;,:.]/)[0]!,
  );
  return !NEVER_FORWARDED.has(names[0]!) && !OWNED.test(names.join('/'));
}
