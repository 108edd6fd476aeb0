import type { Emulator } from '@keygate/emulator';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DeliveryWorker } from './alerts/delivery';
import type { watchErrorRates } from './alerts/monitors';
import { installOrganization } from './account-api/install';
import { createApp, createFastPath } from './app';
import { installDashboard } from './dashboard/install';
import type { RouteTable } from './api-docs/openapi';
import type { KeyResolver } from './auth/resolver';
import { installBilling } from './billing/install';
import type { DailyReconciliation } from './billing/reconcile';
import { openBilling, type GatewayBilling } from './billing/setup';
import type { CallLog } from './call-log/open';
import type { Config } from './config';
import { installIdentity } from './federation/install';
import { readiness } from './health/readiness';
import { Closer } from './kernel/closer';
import { openKernel } from './kernel/kernel';
import { listen } from './kernel/listen';
import { announceGateway, assertNotServed } from './lib/data-dir';
import { tuneHeap } from './lib/heap';
import { createLogger, type Logger } from './lib/logger';
import { capSocketsPerAddress, type SocketCap } from './lib/server-limits';
import { drainServer } from './lib/shutdown';
import type { Limits } from './admission';
import type { GatewayMetrics } from './metrics/metrics';
import { serveMetrics } from './metrics/routes';
import { installTelemetry } from './otlp/install';
import { GATEWAY_OWNER, openRuntime } from './runtime';
import type { Database } from './store';
import type { WholeStore } from './stores';
import type { BatchFollower } from './surface/batch-follower';
import { installMessages } from './surface/install';

export { PortInUseError } from './kernel/listen';

export interface GatewayOptions {
  logger?: Logger;
  clock?: () => number;
  /** Isolates a test in its own PostgreSQL schema. */
  schema?: string;
  /** An already-open database to share (two instances on one embedded database, in tests); not closed by this gateway. */
  database?: Database;
  /** The database `openGatewayDatabase` is opening for this gateway (serve starts it while this code loads); the gateway owns it. */
  opening?: Promise<Database>;
  /** Runs the background jobs (retention, webhook delivery, error-rate watch, billing clock); off in all but one of several workers. */
  background?: boolean;
}

export interface Gateway {
  url: string;
  port: number;
  config: Config;
  store: WholeStore;
  resolver: KeyResolver;
  writer: CallLog;
  limits: Limits;
  follower: BatchFollower;
  /** Null when metrics are off (neither KEYGATE_METRICS_TOKEN nor KEYGATE_METRICS_PORT). */
  metrics: GatewayMetrics | null;
  /** The port of KEYGATE_METRICS_PORT's listener (null without it). */
  metricsPort: number | null;
  /** The webhook delivery worker and the error-rate watch of this instance. */
  alerts: { delivery: DeliveryWorker; errorRates: ReturnType<typeof watchErrorRates> };
  billing: GatewayBilling;
  /** Writes pending last-use times now (they are otherwise written every 10 s). */
  flushLastUsed(): Promise<void>;
  /** The built-in emulator that answers kg_test_ keys. */
  emulator: Emulator;
  /** The daily reconciliation with the provider's reports (claimed per account and day across instances). */
  reconciliation: DailyReconciliation;
  operatorToken: string;
  /** The app's route table: what tests derive route lists from. */
  routes: RouteTable['routes'];
  /** Connections refused by the per-address bound. */
  sockets: SocketCap;
  /** Stops accepting, lets calls in flight finish within the shutdown grace, ends the rest, then closes everything. */
  close(): Promise<void>;
  /** Ends the shutdown grace now (before or during close): open calls get their error event, the rest of close runs as usual. */
  hurry(): void;
}

export async function startGateway(config: Config, opts: GatewayOptions = {}): Promise<Gateway> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const clock = opts.clock ?? Date.now;
  // V8 sized its heap for a program that hardly allocates after quiet spells (lib/heap.ts).
  tuneHeap();
  if (!config.databaseUrl && !opts.database && !opts.opening) assertNotServed(config.dataDir);
  const rt = await openRuntime(config, {
    logger,
    owner: GATEWAY_OWNER,
    ...(opts.schema ? { schema: opts.schema } : {}),
    ...(opts.database ? { database: opts.database } : {}),
    ...(opts.opening ? { opening: opts.opening } : {}),
  });
  const closer = new Closer();
  closer.add(() => rt.close());
  try {
    let url = '';
    let billing: GatewayBilling | undefined;
    const { kernel, registry: metrics } = await openKernel({
      config,
      runtime: rt,
      clock,
      logger,
      background: opts.background ?? true,
      closer,
      address: () => url,
      standing: async (store) => (billing = await openBilling(config, store, clock, logger, () => url)).book,
    });
    if (!billing) throw new Error('billing was not opened');
    const reconciliation = installBilling(kernel, billing);
    const organization = await installOrganization(kernel);
    const messages = await installMessages(kernel);
    const deps = {
      kernel,
      operatorToken: rt.operatorToken,
      messages,
      identity: installIdentity(kernel),
      telemetry: installTelemetry(kernel),
      billing,
      organization,
      dashboard: installDashboard(kernel),
      metrics: metrics && config.metricsToken ? { registry: metrics, token: config.metricsToken } : null,
      readiness: readiness({
        database: kernel.store.health,
        callLog: config.callLog ? kernel.callLog : null,
        upstreamUrl: config.upstreamUrl,
        // The writer retries a failed batch with a backoff of up to 30 s.
        stallMs: Math.max(60_000, config.flushIntervalMs * 20),
        databaseGraceMs: config.keyStaleMaxMs,
      }),
    };
    const app = createApp(deps);

    const server = await listen(app.fetch, config, logger, createFastPath(deps));
    const sockets = capSocketsPerAddress(server as Server, config.maxSocketsPerAddress, logger);
    const hurry = new AbortController();
    closer.add(() =>
      drainServer(server as Server, {
        graceMs: config.shutdownGraceMs,
        hurry: hurry.signal,
        endInFlight: () => messages.inFlight.endAll(),
        logger,
      }),
    );
    const metricsServer =
      metrics && config.metricsPort !== null
        ? await serveMetrics(metrics, {
            host: config.host,
            port: config.metricsPort,
            token: config.metricsToken,
          })
        : null;
    if (metricsServer) closer.add(() => metricsServer.close());
    const port = (server.address() as AddressInfo).port;
    url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    if (rt.embedded && !opts.database) closer.add(announceGateway(config.dataDir, { pid: process.pid, url }));

    let closing: Promise<void> | null = null;
    return {
      url,
      port,
      config,
      store: rt.store,
      resolver: kernel.keys,
      writer: kernel.callLog,
      limits: kernel.limits,
      follower: messages.follower,
      billing,
      alerts: organization.alerts,
      metrics,
      metricsPort: metricsServer?.port ?? null,
      flushLastUsed: kernel.flushLastUsed,
      emulator: messages.emulator,
      reconciliation,
      operatorToken: rt.operatorToken ?? '',
      sockets,
      routes: app.routes,
      close: () => (closing ??= closer.run(logger)),
      hurry: () => hurry.abort(),
    };
  } catch (err) {
    await closer.run(logger);
    throw err;
  }
}
