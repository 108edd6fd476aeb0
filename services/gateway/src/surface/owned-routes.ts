import { Hono, type Context } from 'hono';
import type { AppEnv } from '../app-env';
import { keyAuth } from '../auth/middleware';
import type { ObjectKind } from './object-queries';
import type { ForwardCall } from '../proxy/forward';
import { GatewayError } from '../lib/errors';
import { decoded, pathTemplate } from './call';
import { exchange, jsonOf, relay } from './exchange';
import { listOf, run, streamed, type SurfaceDeps } from './files-routes';
import { readChecked } from './body-check';
import { madeOn } from './object-home';
import { assertVisible, ownerOf } from './ownership';
import { admitSpend, observeSession, sessionNow } from './session-usage';

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
      // A session runs the model: a key whose budget is used up starts none.
      if (kind === 'session') await admitSpend(d, call);
      await readChecked(call, d.proxy, d.objects);
      const answer = await exchange(
        call,
        d.proxy,
        call.upload ? call.req : call.body,
        call.upload?.length ?? null,
      );
      const made = jsonOf(answer);
      if (typeof made?.id === 'string')
        await d.objects.claim(
          call.principal.key.accountId,
          ownerOf(call.principal, kind, made.id, call.groupId, madeOn(answer)),
        );
      relay(call, d.proxy, answer, answer.body, {
        requestBytes: call.body?.length ?? call.upload?.length ?? null,
      });
    };
    const under = async (call: ForwardCall, d: SurfaceDeps, c: Context<AppEnv>) => {
      const id = c.req.param('id')!;
      await assertVisible(d.objects, call.principal, kind, id);
      await readChecked(call, d.proxy, d.objects);
      if (kind !== 'session') return streamed(call, d);
      const tail = call.path.slice(base.length + 1 + encodeURIComponent(id).length);
      if (tail === '' && call.req.method === 'GET') {
        // The session object carries its usage totals: what grew since last seen is recorded.
        const answer = await exchange(call, d.proxy, null, null);
        relay(call, d.proxy, answer);
        return observeSession(d, call, jsonOf(answer));
      }
      const sending = tail === '/events' && call.req.method === 'POST';
      if (sending) await admitSpend(d, call);
      await streamed(call, d);
      // Events set the agent to work: its usage so far is read back and recorded.
      if (sending && call.res.statusCode === 200)
        await observeSession(d, call, await sessionNow(d, call, id)).catch((error) =>
          d.proxy.logger.warn('session usage: reading the session failed', { error }),
        );
    };
    app.post(base, auth, (c) => run(c, deps, `POST ${base}`, base, create));
    app.get(base, auth, (c) => run(c, deps, `GET ${base}`, base, listOf(kind, base)));
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
