import { Hono, type Context } from 'hono';
import type { AppEnv } from '../app-env';
import { keyAuth } from '../auth/middleware';
import type { ObjectKind } from '../store';
import type { ForwardCall } from '../proxy/forward';
import { GatewayError } from '../lib/errors';
import { decoded, pathTemplate } from './call';
import { exchange, jsonOf, relay } from './exchange';
import { list, run, streamed, type SurfaceDeps } from './files-routes';
import { assertVisible, ownerOf } from './ownership';

/**
 * The provider's object families Keygate attributes (beta skills `skills-2025-10-02` and the
 * Managed Agents family; paths as the official TypeScript SDK 1.11 calls them, read
 * 2026-11-25): what a key creates is its member's, lists show only what the caller may see,
 * and everything under an object's id (versions, content, events, archive) answers 404 to
 * others. Everything under an id is streamed through as it arrives (session event streams
 * are server-sent events).
 */
const FAMILIES: ReadonlyArray<[string, ObjectKind]> = [
  ['skills', 'skill'],
  ['sessions', 'session'],
  ['agents', 'agent'],
  ['environments', 'environment'],
];

export function ownedRoutes(deps: SurfaceDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const auth = keyAuth(deps.proxy.resolver, ['live', 'test']);
  for (const [family, kind] of FAMILIES) {
    const base = `/v1/${family}`;
    const create = async (call: ForwardCall, d: SurfaceDeps) => {
      const answer = await exchange(call, d.proxy, call.req, call.upload?.length ?? null);
      const made = jsonOf(answer);
      if (typeof made?.id === 'string')
        await d.objects.claim(
          call.principal.key.accountId,
          ownerOf(call.principal, kind, made.id, call.groupId),
        );
      relay(call, d.proxy, answer, answer.body, { requestBytes: call.upload?.length ?? null });
    };
    const under = async (call: ForwardCall, d: SurfaceDeps, c: Context<AppEnv>) => {
      await assertVisible(d.objects, call.principal, kind, c.req.param('id')!);
      await streamed(call, d);
    };
    app.post(base, auth, (c) => run(c, deps, `POST ${base}`, base, create));
    app.get(base, auth, (c) => run(c, deps, `GET ${base}`, base, list));
    for (const route of [`${base}/:id`, `${base}/:id/*`])
      app.on(['GET', 'POST', 'DELETE', 'PATCH', 'PUT'], route, auth, (c) => {
        // The path as matched (normalised by the router); segments that decode to others are not sent.
        const rest = c.req.path.split('/').slice(4);
        if (rest.some((s) => /%2f|%5c/i.test(s) || /^\.\.?$/.test(decoded(s))))
          throw new GatewayError('not_found_error', `Not found: ${c.req.method} ${c.req.path}`);
        const tail = rest.length ? `/${rest.join('/')}` : '';
        const id = encodeURIComponent(c.req.param('id')!);
        return run(c, deps, pathTemplate(c.req.method, `${base}/{id}${tail}`), `${base}/${id}${tail}`, under);
      });
  }
  return app;
}
