import type { Hono } from 'hono';
import type { AppEnv } from '../../src/app-env';
import { createApp, type AppDeps } from '../../src/app';
import { plainBilling } from '../../src/billing/setup';
import { loadConfig } from '../../src/config';
import type { Kernel } from '../../src/kernel/kernel';
import { createLogger } from '../../src/lib/logger';
import type { WholeStore } from '../../src/stores';

/**
 * App dependencies for an app built outside startGateway: the given kernel parts, every
 * capability's queries on the given store, and inert stand-ins for the rest (never touched
 * unless a handler that needs them runs).
 */
export function appDepsFrom(
  parts: Omit<Partial<Kernel>, 'store'> & Pick<Kernel, 'box' | 'clock'> & { store: WholeStore },
): AppDeps {
  const { store } = parts;
  const kernel = {
    config: loadConfig({}),
    logger: createLogger('error', () => {}),
    keys: {},
    access: { write() {}, hold() {} },
    publicUrl: () => '',
    limits: { admission: {} },
    flushLastUsed: async () => {},
    ...parts,
    db: store.db,
    tenancy: store,
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
    identity: { tokens: {}, exchange: {}, store } as unknown as AppDeps['identity'],
    telemetry: { relay: {}, store } as unknown as AppDeps['telemetry'],
    billing: plainBilling(store, parts.clock),
    organization: { store, alerts: {} } as unknown as AppDeps['organization'],
    dashboard: { store },
    metrics: null,
  };
}

/**
 * The gateway's app built with inert dependencies, to read its route table: building it
 * registers every route, and no handler runs, so the dependencies are never touched.
 */
export function appForRouteTable(): Hono<AppEnv> {
  // A database handle no query runs on: building the queries only keeps it.
  const store = { db: { sql: {} } } as unknown as WholeStore;
  return createApp(appDepsFrom({ store, box: {} as Kernel['box'], clock: Date.now }));
}
