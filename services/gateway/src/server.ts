import { type DailyReconciliation, startDailyReconciliation } from './billing/reconcile';
import { PriceBook, readPriceFile } from './pricing/catalog/price-book';
import { serve, type ServerType } from '@hono/node-server';
import { startEmulator, type Emulator } from '@keygate/emulator';
import {
  createServer,
  maxHeaderSize,
  type IncomingMessage,
  type Server,
  type ServerOptions,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Agent } from 'undici';
import { DeliveryWorker } from './alerts/delivery';
import { onBudgetCrossing, onRetiredSecret, watchErrorRates } from './alerts/monitors';
import { createApp, createFastPath, type AppDeps } from './app';
import type { RouteTable } from './api-docs/openapi';
import { scheduleCallLogMaintenance } from './call-log/retention';
import { KeyResolver, type LookupResult } from './auth/resolver';
import { openBilling, type GatewayBilling } from './billing/setup';
import type { Config } from './config';
import { announceGateway, assertNotServed, StartupError } from './lib/data-dir';
import { EgressPolicy } from './lib/egress';
import { accountUpstreams } from './upstreams/wiring';
import { MemberTokens } from './identity/tokens';
import { WorkloadExchange } from './federation/exchange';
import { IssuerKeys } from './federation/jwks';
import { newRequestId, parserRefusal } from './lib/errors';
import { randomBase62 } from './lib/ids';
import { createLogger, type Logger } from './lib/logger';
import { capSocketsPerAddress, serverOptions, type SocketCap } from './lib/server-limits';
import { drainServer } from './lib/shutdown';
import { createLimits, type Limits } from './admission';
import { fanOut } from './fan-out';
import { AccessLog } from './metrics/access-log';
import { metricsFor, type GatewayMetrics } from './metrics/metrics';
import { serveMetrics } from './metrics/routes';
import { readiness } from './health/readiness';
import { InFlightCalls } from './proxy/in-flight';
import { SseKeepAlive } from './proxy/keep-alive';
import { openStreamEvents } from './streams/open';
import { OtlpRelay } from './otlp/relay';
import { providerKeyCheck } from './proxy/provider-key-check';
import { GATEWAY_OWNER, openRuntime } from './runtime';
import { watchInvalidations, type Database, type Store } from './store';
import { openCallLog, type CallLog } from './call-log/open';
import { BatchFollower } from './surface/batch-follower';

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
  store: Store;
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
  if (!config.databaseUrl && !opts.database && !opts.opening) assertNotServed(config.dataDir);
  const rt = await openRuntime(config, {
    logger,
    owner: GATEWAY_OWNER,
    ...(opts.schema ? { schema: opts.schema } : {}),
    ...(opts.database ? { database: opts.database } : {}),
    ...(opts.opening ? { opening: opts.opening } : {}),
  });
  const { store, box, operatorToken } = rt;
  const cleanup: Array<() => Promise<unknown> | unknown> = [() => rt.close()];
  try {
    // Call records reach the spool before PostgreSQL; what an earlier run left there is replayed.
    const spooled = config.callLog && config.spoolMaxBytes > 0;
    const writer = await openCallLog(config, store, spooled, logger);
    cleanup.unshift(() => writer.close());
    // Partitions ahead of time and retention per plan: at start, then daily.
    const background = opts.background ?? true;
    if (background) cleanup.unshift(scheduleCallLogMaintenance(store, { logger, clock }));
    let url = '';
    const billing = await openBilling(config, store, clock, logger, () => url);
    if (background) cleanup.unshift(billing.startClock());

    // Who may call: billing standing, rate limits, budgets (admission/).
    const limits = await createLimits({
      standing: billing.book,
      holdMs: config.upstreamTimeoutMs + 60_000,
      redisUrl: config.redisUrl,
      onRedisDown: config.limitsOnRedisDown,
      store,
      clock,
      logger,
      budgetTtlMs: config.keyCacheTtlMs,
      onCrossing: onBudgetCrossing(store, logger),
    });
    cleanup.unshift(() => limits.close());
    const metrics: GatewayMetrics | null = metricsFor(
      config,
      {
        ...(config.callLog ? { callLog: { status: () => writer.status(), spooled } } : {}),
        limits: () => limits.status(),
        keyCacheEntries: (): number => resolver.size,
      },
      clock,
    );
    const resolver = new KeyResolver(store, box, {
      ttlMs: config.keyCacheTtlMs,
      staleMaxMs: config.keyStaleMaxMs,
      clock,
      onRetiredSecret: onRetiredSecret(store, clock, logger),
      ...(metrics ? { onLookup: (result: LookupResult) => metrics.keyLookup(result) } : {}),
      onDatabase: (state, error) => {
        if (state === 'down')
          logger.warn('database unreachable: known keys are served from memory, unknown ones get 503', {
            error,
          });
        else logger.info('database reachable again: keys are checked again at their next use');
      },
    });
    // Where a finished call goes: access line, call log, limits and budgets (and their alerts), metrics.
    const access = new AccessLog();
    const record = fanOut({
      access,
      callLog: config.callLog ? writer : null,
      admission: limits.admission,
      metrics,
    });

    const prices = new PriceBook(store, readPriceFile(config.priceFile));

    const emulatorKey = `sk-ant-emulator-${randomBase62(24)}`;
    const emulator = await startEmulator({ port: 0, apiKey: emulatorKey });
    cleanup.unshift(() => emulator.close());

    const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: null });
    cleanup.unshift(() => dispatcher.close());

    // LISTEN/NOTIFY delivers key changes at once; the poll of the invalidations table is the
    // safety net for notifications lost while the LISTEN connection was down.
    const stopWatching = await watchInvalidations(
      store.db,
      (payload) => {
        if (payload.startsWith('budgets:')) limits.budgets.apply(payload);
        else if (payload.startsWith('prices:'))
          prices.reload().catch((error) => logger.warn('price catalog reload failed', { error }));
        else {
          resolver.apply(payload);
          billing.book.apply(payload);
        }
        metrics?.invalidationApplied();
      },
      {
        listen: true,
        pollMs: config.invalidationPollMs,
        onReconnect: () => {
          logger.info('LISTEN connection back: keys held are checked again at their next use');
          resolver.recheckAll();
          billing.book.apply('reconnect');
        },
        onError: (error, where) =>
          logger.warn(
            where === 'listen' ? 'LISTEN unavailable; polling for key changes' : 'key change poll failed',
            { error },
          ),
      },
    );
    cleanup.unshift(stopWatching);
    const egress = new EgressPolicy(config.egressAllow);
    const delivery = new DeliveryWorker(store, box, { ...config.webhooks, egress }, logger);
    if (background) {
      await delivery.start();
      cleanup.unshift(() => delivery.stop());
    }
    const otlpRelay = new OtlpRelay(store, egress, logger);
    cleanup.unshift(() => otlpRelay.close());
    const issuerKeys = new IssuerKeys({ egress, clock });
    cleanup.unshift(() => issuerKeys.close());
    const errorRates = watchErrorRates(store, config.errorRateCheckMs, logger);
    cleanup.unshift(() => errorRates.stop());
    // Another worker watches; this one still checks when asked.
    if (!background) await errorRates.stop();

    await billing.book.load();
    await prices.reload();
    const reconciliation = startDailyReconciliation(
      { store, box, upstreamUrl: config.upstreamUrl },
      clock,
      (error, accountId) => logger.warn('reconciliation failed', { error, accountId }),
    );
    cleanup.unshift(() => reconciliation.stop());
    const flushLastUsed = () => store.keys.touch(resolver.drainLastUsed());
    const touchTimer = setInterval(() => {
      flushLastUsed().catch((error) => logger.warn('last_used_at update failed', { error }));
    }, 10_000);
    touchTimer.unref();
    cleanup.unshift(() => {
      clearInterval(touchTimer);
      return flushLastUsed();
    });

    // Open message batches are followed to their end; each result becomes a call at the batch price.
    const follower = new BatchFollower({
      store,
      box,
      upstreams: { live: config.upstreamUrl, test: { baseUrl: emulator.url, apiKey: emulatorKey } },
      dispatcher,
      timeoutMs: config.upstreamTimeoutMs,
      record,
      flush: () => writer.flush(),
      release: (hold) => limits.admission.releaseBatch(hold.id, hold.counters),
      logger,
    });
    follower.start();
    cleanup.unshift(() => follower.stop());

    const inFlight = new InFlightCalls();
    const streamEvents = openStreamEvents(config, logger);
    cleanup.unshift(() => streamEvents.close());
    const keepAlive = config.sseKeepAliveMs > 0 ? new SseKeepAlive(config.sseKeepAliveMs) : null;
    if (keepAlive) cleanup.unshift(() => keepAlive.close());
    const appDeps: AppDeps & { access: AccessLog } = {
      prices,
      upstreamUrl: config.upstreamUrl,
      store,
      box,
      clock,
      logger,
      operatorToken,
      evict: resolver,
      trialDays: config.trialDays,
      webhooks: { egress, maxEndpoints: config.webhooks.maxEndpoints },
      identity: new MemberTokens({
        store,
        box,
        egress,
        clock,
        tokenTtlMs: config.memberTokenTtlMs,
        refreshIdleMs: config.idpRefreshIdleMs,
        publicUrl: config.publicUrl,
      }),
      workloadExchange: new WorkloadExchange(store, issuerKeys, clock),
      flushLastUsed,
      metrics: metrics && config.metricsToken ? { registry: metrics, token: config.metricsToken } : null,
      readiness: readiness({
        database: store.health,
        callLog: config.callLog ? writer : null,
        upstreamUrl: config.upstreamUrl,
        // The writer retries a failed batch with a backoff of up to 30 s.
        stallMs: Math.max(60_000, config.flushIntervalMs * 20),
      }),
      billing,
      access,
      openPassthrough: config.openPassthrough,
      maxFileBytes: config.maxFileBytes,
      modelsCacheMs: config.modelsCacheMs,
      settleBatch: (id: string) => follower.settle(id),
      otlpRelay,
      batchHolds: limits.admission,
      publicUrl: () => config.publicUrl ?? url,
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
        inFlight,
        admission: limits.admission,
        keepAlive,
        streamEvents,
        accountUpstreams: accountUpstreams({ sql: store.db.sql, box, egress, config, dispatcher }),
        onUpstreamStatus: providerKeyCheck({
          logger,
          clock,
          report: (account, status) => {
            store.accounts
              .setProviderKeyStatus(account.id, account.providerKeySealed!, status)
              .catch((error) =>
                logger.warn('provider key status update failed', { accountId: account.id, error }),
              );
          },
        }),
      },
    };
    const app = createApp(appDeps);

    const server = await listen(app.fetch, config, logger, createFastPath(appDeps));
    const sockets = capSocketsPerAddress(server as Server, config.maxSocketsPerAddress, logger);
    const hurry = new AbortController();
    cleanup.unshift(() =>
      drainServer(server as Server, {
        graceMs: config.shutdownGraceMs,
        hurry: hurry.signal,
        endInFlight: () => inFlight.endAll(),
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
    if (metricsServer) cleanup.unshift(() => metricsServer.close());
    const port = (server.address() as AddressInfo).port;
    url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    if (rt.embedded && !opts.database)
      cleanup.unshift(announceGateway(config.dataDir, { pid: process.pid, url }));

    let closing: Promise<void> | null = null;
    return {
      url,
      port,
      config,
      store,
      resolver,
      writer,
      limits,
      follower,
      billing,
      alerts: { delivery, errorRates },
      metrics,
      metricsPort: metricsServer?.port ?? null,
      flushLastUsed,
      emulator,
      reconciliation,
      operatorToken: operatorToken ?? '',
      sockets,
      routes: app.routes,
      close: () => (closing ??= runAll(cleanup, logger)),
      hurry: () => hurry.abort(),
    };
  } catch (err) {
    await runAll(cleanup, logger);
    throw err;
  }
}

/** The port is taken (another gateway, or another program). */
export class PortInUseError extends StartupError {}

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

function listen(
  fetch: (req: Request, env: any) => Response | Promise<Response>,
  config: Config,
  logger: Logger,
  fastPath: (req: IncomingMessage, res: ServerResponse) => boolean,
): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve(
      {
        fetch,
        port: config.port,
        hostname: config.host,
        serverOptions: serverOptions(config),
        // The fast path takes `POST /v1/messages`; every other request goes to the app.
        createServer: ((options: ServerOptions, app: Listener) =>
          createServer(options, (req, res) => {
            if (!fastPath(req, res)) app(req, res);
          })) as typeof createServer,
      },
      () => resolve(server),
    );
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE')
        reject(
          new PortInUseError(
            `port ${config.port} on ${config.host} is already in use (another gateway, or another program); stop it or set PORT`,
          ),
        );
      else if (err.code === 'EACCES')
        reject(
          new PortInUseError(
            `not allowed to listen on port ${config.port} on ${config.host}; choose another PORT`,
          ),
        );
      else reject(err);
    });
    if ('requestTimeout' in server) {
      const answered = new WeakSet<Socket>();
      server.on('clientError', (err: Error, socket: Socket) => {
        // The parser stays failed and reports every further chunk of the same connection.
        if (answered.has(socket)) return;
        answered.add(socket);
        refuseUnparsed(err, socket, maxHeaderSize, logger);
      });
    }
  });
}

/**
 * Answers what Node's HTTP parser refused before the app ran (a header block over the limit,
 * a malformed request line or header) in the provider's shape, then closes the connection:
 * the parser cannot read another request from it. The close waits for the client to read
 * the answer (at most a second): closing with unread request bytes resets the connection,
 * and the client may then lose the answer.
 */
function refuseUnparsed(
  err: Error & { code?: string },
  socket: Socket,
  maxHeaderBytes: number,
  logger: Logger,
): void {
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const requestId = newRequestId();
  const refusal = parserRefusal(err, requestId, maxHeaderBytes);
  logger.info('request refused by the HTTP parser', { requestId, status: refusal.status, code: err.code });
  socket.end(refusal.http);
  const linger = setTimeout(() => socket.destroy(), 1_000);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
}

// A shutdown step that has not finished in this long is logged and left behind: a stop never
// hangs on one stuck part (the call log's records are in the spool, replayed at the next start).
const SHUTDOWN_STEP_MS = 15_000;

async function runAll(steps: Array<() => Promise<unknown> | unknown>, logger: Logger): Promise<void> {
  for (const [index, step] of steps.entries()) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), SHUTDOWN_STEP_MS);
    });
    try {
      const outcome = await Promise.race([Promise.resolve().then(step), late]);
      if (outcome === 'late')
        logger.warn('shutdown step did not finish in time; going on', {
          step: index,
          code: String(step).slice(0, 120),
        });
    } catch (error) {
      logger.warn('shutdown step failed', { error });
    } finally {
      clearTimeout(timer);
    }
  }
  // Log lines held back by an asynchronous destination are written before close resolves.
  logger.flush();
}
