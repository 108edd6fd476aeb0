import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono, type Context } from 'hono';
import type { AppEnv } from '../app-env';
import { keyAuth } from '../auth/middleware';
import { GatewayError } from '../lib/errors';
import { forward } from '../proxy/forward';
import type { ProxyOptions } from '../proxy/routes';
import { admitOrThrow, decoded, pathTemplate, refused, surfaceCall } from './call';

/**
 * Every other `/v1/…` path, forwarded as sent (method, path, query, headers, body streamed both
 * ways) with the account's provider key, so an endpoint the provider ships tomorrow works the
 * same day. `/v1/organizations/…` is Keygate's own account API and never leaves. `served(path)`
 * says whether Keygate has routes of its own at a path; those, and the account API, get `notFound`.
 */
export function passthroughRoutes(
  opts: ProxyOptions,
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
      const plain = decoded(path).toLowerCase();
      // A path that decodes to another (dot segments, encoded slashes) or to the account API is
      // not forwarded with the account's key: it answers the provider's 404.
      if (plain.startsWith('/v1/organizations') || /(^|\/)\.\.?(\/|$)|\\/.test(plain) || /%2f/i.test(path)) {
        const err = new GatewayError('not_found_error', `Not found: ${c.req.method} ${path}`);
        opts.record(refused(call, err));
        throw err;
      }
      try {
        await admitOrThrow(opts, call.principal, call.endpoint);
      } catch (err) {
        if (err instanceof GatewayError) opts.record(refused(call, err));
        throw err;
      }
      await forward(call, opts);
      return RESPONSE_ALREADY_SENT;
    },
  );
  return app;
}
