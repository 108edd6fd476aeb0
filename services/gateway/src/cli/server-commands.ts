import { availableParallelism } from 'node:os';
import { StartupError } from '../lib/data-dir';
import { CliError, EXIT } from './backend';
import { positiveInt, type Command } from './command';
import { WORKER_ENV, type WorkerListening } from './workers';

export const serverCommands: Record<string, Command> = {
  serve: {
    summary: 'Run the gateway (embedded database unless DATABASE_URL is set)',
    usage: `Usage: keygate serve [--workers N]

Serves the gateway on $HOST:$PORT (default 127.0.0.1:8080) until interrupted (SIGINT/SIGTERM),
then lets calls in flight finish (KEYGATE_SHUTDOWN_GRACE_MS; a second signal ends the grace at
once), writes the queued call log and exits 0.

  --workers N   gateway processes sharing the port (default: KEYGATE_WORKERS, else one per
                core with REDIS_URL, where the workers share rate-limit counters, and one
                without it); the embedded database, the background jobs and each spool stay
                with one owner`,
    options: { workers: { type: 'string' } },
    async run(values, config) {
      // Every core by default when the workers can share their rate-limit counters (Redis); without
      // REDIS_URL each process counts them alone, so N workers would let a key N times its limit:
      // one process then, unless asked (and warned) otherwise.
      const workers =
        positiveInt(values, 'workers') ?? config.workers ?? (config.redisUrl ? availableParallelism() : 1);
      if (workers < 1) throw new CliError('--workers: at least 1.', EXIT.usage);
      if (workers > 1) {
        const [{ createLogger }, { serveWorkers }, { openGatewayDatabase }] = await Promise.all([
          import('../lib/logger'),
          import('./workers'),
          import('../runtime'),
        ]);
        return serveWorkers(config, workers, createLogger(config.logLevel), openGatewayDatabase).catch(
          (err) => {
            throw err instanceof StartupError ? new CliError(`cannot start: ${err.message}`) : err;
          },
        );
      }
      const worker = process.env[WORKER_ENV];
      // A terminal's Ctrl-C reaches every process of the foreground group (pnpm and node) and
      // pnpm forwards it again: every signal after the first only ends the grace, so the
      // drain (error events, the call log, the embedded PostgreSQL stopped) always completes.
      const stop = stopSignals();
      // The server is loaded by the command that runs it, so the other commands start light;
      // the database starts meanwhile (PostgreSQL in its processes, node loading in this one).
      const opening = (await import('../runtime')).openGatewayDatabase(config);
      const [{ createLogger }, { startGateway }] = await Promise.all([
        import('../lib/logger'),
        import('../server'),
      ]);
      const logger = createLogger(config.logLevel);
      const gateway = await startGateway(config, {
        logger,
        opening,
        background: worker === undefined || worker === '1',
      }).catch((err) => {
        throw err instanceof StartupError ? new CliError(`cannot start: ${err.message}`) : err;
      });
      logger.info('keygate listening', {
        url: gateway.url,
        database: config.databaseUrl
          ? `postgresql${config.dbSchema ? ` (schema ${config.dbSchema})` : ''}`
          : `embedded (${config.dataDir})`,
        upstream: config.upstreamUrl,
        limits: gateway.limits.shared,
        ...(worker ? { worker: Number(worker) } : {}),
      });
      // One process prints where the dashboard is and the next step; with workers, the primary
      // prints it once every worker listens (worker 1 tells it whether accounts exist).
      const hasAccounts =
        !worker || worker === '1'
          ? (await gateway.store.accounts.list({}, { limit: 1 })).rows.length > 0
          : undefined;
      if (worker && process.send)
        process.send({ keygate: 'listening', url: gateway.url, hasAccounts } satisfies WorkerListening);
      if (!worker) {
        const { startMessage } = await import('./start-message');
        process.stdout.write(startMessage(config, { url: gateway.url, hasAccounts: hasAccounts! }));
      }
      const first = await stop.first;
      logger.info('shutting down; writing the call log', { signal: first });
      stop.onRepeat((signal) => {
        logger.warn('signal repeated: ending calls in flight now, then writing the call log', { signal });
        gateway.hurry();
      });
      await gateway.close();
      stop.dispose();
      // Everything is written by now: a handle a dependency leaves open (a database client still
      // reconnecting after an outage) must not keep a stopped gateway alive. Unref'd, so a clean
      // stop exits at once without waiting for it.
      setTimeout(() => process.exit(process.exitCode ?? 0), 3_000).unref();
      // A worker's channel to the primary would keep it alive.
      if (worker) process.disconnect?.();
      return 0;
    },
  },

  'migrate-data-dir': {
    summary: 'Convert a data dir written by the earlier embedded engine (PGlite) to PostgreSQL',
    usage: `Usage: keygate migrate-data-dir

Copies the database in <data dir>/pgdata (Keygate's embedded engine before PostgreSQL 18) into
the embedded PostgreSQL, then renames pgdata aside. Run it with no gateway running. Needs the
PGlite package once (the command says how to add it when it is missing).`,
    options: {},
    async run(_values, config) {
      if (config.databaseUrl)
        throw new CliError('migrate-data-dir converts the embedded database: unset DATABASE_URL', 2);
      const { convertLegacyDataDir } = await import('../store/legacy-pglite');
      return convertLegacyDataDir(config.dataDir, (line) => process.stdout.write(`${line}\n`)).catch(
        (err) => {
          throw err instanceof StartupError ? new CliError(err.message) : err;
        },
      );
    },
  },

  migrate: {
    summary: 'Apply database migrations and exit',
    usage:
      'Usage: keygate migrate\n\nApplies the migrations not applied yet (each in its own transaction) and prints them.',
    options: {},
    async run(_values, config) {
      const [{ openRuntime }, { migrate }] = await Promise.all([import('../runtime'), import('../store')]);
      const rt = await openRuntime(config, { owner: 'keygate migrate' });
      try {
        const applied = await migrate(rt.store.db.sql);
        process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'up to date\n');
      } finally {
        await rt.close();
      }
      return 0;
    },
  },
};

// One Ctrl-C under `pnpm start` arrives twice: from the terminal and forwarded by pnpm, at once.
const ECHO_MS = 500;

/**
 * SIGINT and SIGTERM for the whole run: the first resolves `first`, every later one calls
 * `onRepeat`'s handler; one that follows the previous within ECHO_MS is the same keypress.
 */
function stopSignals() {
  let repeat: (signal: NodeJS.Signals) => void = () => {};
  let seen = 0;
  let lastAt = 0;
  let resolveFirst!: (signal: NodeJS.Signals) => void;
  const first = new Promise<NodeJS.Signals>((r) => (resolveFirst = r));
  const onSignal = (signal: NodeJS.Signals) => {
    const now = Date.now();
    if (seen > 0 && now - lastAt < ECHO_MS) return;
    lastAt = now;
    if (seen++ === 0) resolveFirst(signal);
    else repeat(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    first,
    onRepeat(handler: (signal: NodeJS.Signals) => void) {
      repeat = handler;
      // A second signal that came before the gateway was up counts now.
      if (seen > 1) handler('SIGINT');
    },
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
