import type { Hono } from 'hono';
import type { AppEnv } from '../../src/app-env';
import { createApp, type AppDeps } from '../../src/app';
import { createLogger } from '../../src/lib/logger';

/**
 * The gateway's app built with inert dependencies, to read its route table: building it
 * registers every route, and no handler runs, so the dependencies are never touched.
 */
export function appForRouteTable(): Hono<AppEnv> {
  return createApp({
    store: {} as AppDeps['store'],
    box: {} as AppDeps['box'],
    clock: Date.now,
    logger: createLogger('error', () => {}),
    operatorToken: 'operator-token',
    readiness: async () => ({}) as never,
    proxy: { resolver: {} as AppDeps['proxy']['resolver'] } as AppDeps['proxy'],
    identity: {} as AppDeps['identity'],
    workloadExchange: {} as AppDeps['workloadExchange'],
  });
}
