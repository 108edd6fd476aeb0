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
import { createLimits, type Limits } from './limits';
import { openRuntime } from './runtime';
import { watchInvalidations, type Database, type Store } from './store';
import type { CallRecord } from './call-log/record';
import { Spool } from './call-log/spool';
import { CallLogWriter } from './call-log/writer';

export interface GatewayOptions {
  logger?: Logger;
  clock?: () => number;
  /** Isolates a test in its own PostgreSQL schema. */
  schema?: string;
  /** An already-open database to share (two instances on one embedded database, in tests); not closed by this gateway. */
  database?: Database;
}

export interface Gateway {
  url: string;
  port: number;
  config: Config;
  store: Store;
  resolver: KeyResolver;
  writer: CallLogWriter;
  limits: Limits;
  /** Writes pending last-use times now (they are otherwise written every 10 s). */
  flushLastUsed(): Promise<void>;
  /** The built-in emulator that answers kg_test_ keys. */
  emulator: Emulator;
  operatorToken: string;
  close(): Promise<void>;
}

export async function startGateway(config: Config, opts: GatewayOptions = {}): Promise<Gateway> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const clock = opts.clock ?? Date.now;
  const rt = await openRuntime(config, { logger, ...(opts.schema ? { schema: opts.schema } : {}), ...(opts.database ? { database: opts.database } : {}) });
  const { store, box, operatorToken } = rt;
  const cleanup: Array<() => Promise<unknown> | unknown> = [() => rt.close()];
  try {
    const resolver = new KeyResolver(store, box, { ttlMs: config.keyCacheTtlMs, clock });

    // Call records reach the spool before PostgreSQL; what an earlier run left there is replayed.
    const spool = config.callLog && config.spoolMaxBytes > 0
      ? await Spool.open({ dir: config.spoolDir, maxBytes: config.spoolMaxBytes, syncMs: config.spoolSyncMs, logger })
      : null;
    if (spool?.recovered.length) logger.info('call spool: replaying segments left by an earlier run', { segments: spool.recovered.length });
    const writer = new CallLogWriter(store.calls, { flushIntervalMs: config.flushIntervalMs, spool, logger });
    cleanup.unshift(() => writer.close());
    const limits = await createLimits({ redisUrl: config.redisUrl, store, clock, logger });
    cleanup.unshift(() => limits.close());
    // Limits see every call (token and spend counters), whether or not the call log is kept.
    const record = (r: CallRecord) => {
      if (config.callLog) writer.enqueue(r);
      limits.admission.observe(r);
    };

    const emulatorKey = `sk-ant-emulator-${randomBase62(24)}`;
    const emulator = await startEmulator({ port: 0, apiKey: emulatorKey });
    cleanup.unshift(() => emulator.close());

    const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: null });
    cleanup.unshift(() => dispatcher.close());

    // LISTEN/NOTIFY where PostgreSQL delivers it (not the embedded database), and a poll of
    // the invalidations table everywhere, so a revoked key is refused within a second.
    const stopWatching = await watchInvalidations(store.db, (payload) => resolver.apply(payload), {
      listen: !store.db.embedded,
      pollMs: config.invalidationPollMs,
      onError: (error, where) => logger.warn(where === 'listen' ? 'LISTEN unavailable; polling for key changes' : 'key change poll failed', { error }),
    });
    cleanup.unshift(stopWatching);
    const flushLastUsed = () => store.keys.touch(resolver.drainLastUsed());
    const touchTimer = setInterval(() => {
      flushLastUsed().catch((error) => logger.warn('last_used_at update failed', { error }));
    }, 10_000);
    touchTimer.unref();
    cleanup.unshift(() => {
      clearInterval(touchTimer);
      return flushLastUsed();
    });

    const app = createApp({
      store,
      box,
      clock,
      logger,
      operatorToken,
      evict: resolver,
      trialDays: config.trialDays,
      flushLastUsed,
      proxy: {
        resolver,
        upstreams: { live: config.upstreamUrl, test: { baseUrl: emulator.url, apiKey: emulatorKey } },
        dispatcher,
        timeoutMs: config.upstreamTimeoutMs,
        maxBodyBytes: config.maxBodyBytes,
        bodyIdleMs: config.bodyIdleMs,
        maxPdfPages: config.maxPdfPages,
        record,
        logger,
        admit: (principal, call) => limits.admission.admit(principal, call),
      },
    });

    const server = await listen(app.fetch, config);
    cleanup.unshift(() => closeServer(server));
    const port = (server.address() as AddressInfo).port;
    const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    if (rt.embedded && !opts.database) cleanup.unshift(announceGateway(config.dataDir, { pid: process.pid, url }));

    let closing: Promise<void> | null = null;
    return {
      url, port, config, store, resolver, writer, limits, flushLastUsed, emulator, operatorToken: operatorToken ?? '',
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

async function runAll(steps: Array<() => Promise<unknown> | unknown>, logger: Logger): Promise<void> {
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      logger.warn('shutdown step failed', { error });
    }
  }
}
