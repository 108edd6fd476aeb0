import type { Hono } from 'hono';
import type { AppEnv } from '../../src/app-env';
import { createApp, type AppDeps } from '../../src/app';
import { plainBilling } from '../../src/billing/setup';
import { loadConfig } from '../../src/config';
import type { Kernel } from '../../src/kernel/kernel';
import { createLogger } from '../../src/lib/logger';

/**
 * App dependencies for an app built outside startGateway: the given kernel parts, and inert
 * stand-ins for the rest (never touched unless a handler that needs them runs).
 */
export function appDepsFrom(parts: Partial<Kernel> & Pick<Kernel, 'store' | 'box' | 'clock'>): AppDeps {
  const kernel = {
    config: loadConfig({}),
    logger: createLogger('error', () => {}),
    keys: {},
    access: { write() {}, hold() {} },
    publicUrl: () => '',
    limits: { admission: {} },
    flushLastUsed: async () => {},
    ...parts,
  } as unknown as Kernel;
  return {
    kernel,
    operatorToken: 'operator-token',
    readiness: async () => ({}) as never,
    messages: {
      proxy: { resolver: kernel.keys },
      follower: {},
      emulator: {},
      inFlight: {},
      openPassthrough: false,
      maxFileBytes: 1,
      modelsCacheMs: 1,
    } as unknown as AppDeps['messages'],
    identity: { tokens: {}, exchange: {} } as unknown as AppDeps['identity'],
    telemetry: { relay: {} } as unknown as AppDeps['telemetry'],
    billing: plainBilling(parts.store, parts.clock),
    metrics: null,
  };
}

/**
 * The gateway's app built with inert dependencies, to read its route table: building it
 * registers every route, and no handler runs, so the dependencies are never touched.
 */
export function appForRouteTable(): Hono<AppEnv> {
  return createApp(appDepsFrom({ store: {} as Kernel['store'], box: {} as Kernel['box'], clock: Date.now }));
}
