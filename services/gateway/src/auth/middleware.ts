import type { HttpBindings } from '@hono/node-server';
import type { MiddlewareHandler } from 'hono';
import { presentedCredential } from '../lib/credentials';
import type { KeyKind } from './keys';
import type { KeyResolver, Principal } from './resolver';

/** What `keyAuth` sets; the app's environment includes it, as Hono's request-id middleware declares `requestId`. */
export interface KeyAuthVariables {
  principal: Principal;
}

/** The least an app's environment holds for `keyAuth`. */
interface KeyAuthEnv {
  Bindings: HttpBindings;
  Variables: KeyAuthVariables;
}

/** Resolves the caller's key to a principal, reading the raw Node headers when served by Node. */
export function keyAuth<E extends KeyAuthEnv>(
  resolver: KeyResolver,
  allowed: readonly KeyKind[],
): MiddlewareHandler<E> {
  return async function keyAuth(c, next) {
    const h = c.env?.incoming?.headers;
    const token = h
      ? presentedCredential(h.authorization, h['x-api-key'] as string | undefined)
      : presentedCredential(c.req.header('authorization'), c.req.header('x-api-key'));
    const client = c.env?.incoming?.socket?.remoteAddress ?? '';
    c.set('principal', await resolver.resolve(token, allowed, client));
    await next();
  };
}
