import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../app-env';
import { presentedCredential } from '../lib/credentials';
import type { KeyKind } from './keys';
import type { KeyResolver } from './resolver';

/** Resolves the caller's key to a principal, reading the raw Node headers when served by Node. */
export function keyAuth<E extends AppEnv = AppEnv>(
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
