import { serve, type ServerType } from '@hono/node-server';
import { startEmulator, type Emulator } from '@keygate/emulator';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { createApp } from './app';
import { KeyResolver } from './auth/resolver';
import type { Config } from './config';
import { announceGateway } from './lib/data-dir';
import { randomBase62 } from './lib/ids';
import { createLogger, type Logger } from './lib/logger';
import { openRuntime } from './runtime';
import type { Store } from './store';
import type { CallRecord } from './usage/record';
import { UsageWriter } from './usage/writer';

export interface GatewayOptions {
  logger?: Logger;
  clock?: () => number;
  /** Isolates a test in its own PostgreSQL schema. */
  schema?: string;
}

export interface Gateway {
  url: string;
  port: number;
  config: Config;
  store: Store;
  resolver: KeyResolver;
  writer: UsageWriter;
  /** The built-in emulator that answers kg_test_ keys. */
  emulator: Emulator;
  operatorToken: string;
  close(): Promise<void>;
}

const INVALIDATION_CHANNEL = 'keygate_invalidate';

export async function startGateway(config: Config, opts: GatewayOptions = {}): Promise<Gateway> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const clock = opts.clock ?? Date.now;
  const rt = await openRuntime(config, { logger, ...(opts.schema ? { schema: opts.schema } : {}) });
  const { store, box, operatorToken } = rt;
  const cleanup: Array<() => Promise<unknown> | unknown> = [() => rt.close()];
  try {
    const resolver = new KeyResolver(store, box, { ttlMs: config.keyCacheTtlMs, clock });

    const writer = new UsageWriter(store.calls, { flushIntervalMs: config.flushIntervalMs, logger });
    cleanup.unshift(() => writer.close());
    const record = config.callLog ? (r: CallRecord) => writer.enqueue(r) : () => {};

    const emulatorKey = `sk-ant-emulator-${randomBase62(24)}`;
    const emulator = await startEmulator({ port: 0, apiKey: emulatorKey });
    cleanup.unshift(() => emulator.close());

    const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: null });
    cleanup.unshift(() => dispatcher.close());

    const stopListening = await listenForInvalidations(store, resolver, logger);
    cleanup.unshift(stopListening);
    const touchTimer = setInterval(() => {
      store.keys.touch(resolver.drainLastUsed()).catch((error) => logger.warn('last_used_at update failed', { error }));
    }, 10_000);
    touchTimer.unref();
    cleanup.unshift(() => clearInterval(touchTimer));

    const app = createApp({
      store,
      box,
      clock,
      logger,
      operatorToken,
      proxy: {
        resolver,
        upstreams: { live: config.upstreamUrl, test: { baseUrl: emulator.url, apiKey: emulatorKey } },
        dispatcher,
        timeoutMs: config.upstreamTimeoutMs,
        maxBodyBytes: config.maxBodyBytes,
        maxPdfPages: config.maxPdfPages,
        record,
        logger,
      },
    });

    const server = await listen(app.fetch, config);
    cleanup.unshift(() => closeServer(server));
    const port = (server.address() as AddressInfo).port;
    const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    if (rt.embedded) cleanup.unshift(announceGateway(config.dataDir, { pid: process.pid, url }));

    let closing: Promise<void> | null = null;
    return {
      url, port, config, store, resolver, writer, emulator, operatorToken: operatorToken ?? '',
      close: () => (closing ??= runAll(cleanup, logger)),
    };
  } catch (err) {
    await runAll(cleanup, logger);
    throw err;
  }
}

function listen(fetch: (req: Request, env: any) => Response | Promise<Response>, config: Config): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port: config.port, hostname: config.host }, () => resolve(server));
    server.once('error', reject);
    if ('requestTimeout' in server) {
      // Streams and large uploads may take long; upstream timeouts bound them instead.
      server.requestTimeout = 0;
      server.keepAliveTimeout = 65_000;
    }
  });
}

function closeServer(server: ServerType): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    if ('closeIdleConnections' in server) server.closeIdleConnections();
    // Open streams get a moment to finish, then are cut.
    setTimeout(() => ('closeAllConnections' in server ? server.closeAllConnections() : undefined), 2_000).unref();
  });
}

/** Other instances evict cached keys within a second of a change, through LISTEN/NOTIFY. */
async function listenForInvalidations(store: Store, resolver: KeyResolver, logger: Logger): Promise<() => Promise<void>> {
  try {
    const { unlisten } = await store.db.sql.listen(INVALIDATION_CHANNEL, (payload) => {
      const [kind, id] = payload.split(':');
      if (kind === 'key' && id) resolver.invalidateKey(id);
      else if (kind === 'account' && id) resolver.invalidateAccount(id);
      else resolver.clear();
    });
    return unlisten;
  } catch (error) {
    logger.warn('LISTEN unavailable; relying on the key cache lifetime', { error });
    return async () => {};
  }
}

async function runAll(steps: Array<() => Promise<unknown> | unknown>, logger: Logger): Promise<void> {
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      logger.warn('shutdown step failed', { error });
    }
  }
}
