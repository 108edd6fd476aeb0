import cluster, { type Worker } from 'node:cluster';
import { join } from 'node:path';
import type { Config } from '../config';
import { announceGateway, assertNotServed, persistentSecret } from '../lib/data-dir';
import type { Logger } from '../lib/logger';
import type { Database } from '../store';

/** What a worker tells the primary once it listens. */
export interface WorkerListening {
  keygate: 'listening';
  url: string;
  /** Worker 1 only: whether the database holds any account (for the start message). */
  hasAccounts?: boolean;
}

/** Set in each worker's environment: its number, 1 to N; worker 1 runs the background jobs. */
export const WORKER_ENV = 'KEYGATE_WORKER';

/**
 * `keygate serve --workers N`: N gateway processes on one port (node:cluster: the primary
 * accepts and hands connections out in turn), sharing nothing but the database and Redis, as
 * separate instances do. The primary owns the embedded database (when there is no
 * DATABASE_URL) and the data dir's announcement; worker 1 runs the background jobs; each
 * worker has its own spool directory (`<spool>/worker-<n>`), so every spool has one writer.
 * A worker that dies is started again; SIGINT/SIGTERM drains every worker, then stops the
 * database.
 */
export async function serveWorkers(
  config: Config,
  count: number,
  logger: Logger,
  openDatabase: (config: Config) => Promise<Database>,
): Promise<number> {
  const env: Record<string, string> = {};
  let db: Database | null = null;
  if (!config.databaseUrl) {
    assertNotServed(config.dataDir);
    db = await openDatabase(config);
    env.DATABASE_URL = db.url;
    env.KEYGATE_SECRET = config.secret ?? persistentSecret(config.dataDir, 'secret');
    env.KEYGATE_OPERATOR_TOKEN = config.operatorToken ?? persistentSecret(config.dataDir, 'operator-token');
  }
  if (!config.redisUrl)
    logger.warn(
      'without REDIS_URL each worker counts rate limits alone: a key may make up to N times its per-minute limits (spend caps and budgets are shared through the database)',
      { workers: count },
    );
  let stopping = false;
  let unannounce = null as (() => void) | null;
  let first = null as WorkerListening | null;
  cluster.setupPrimary({ exec: process.argv[1]!, args: ['serve', '--workers', '1'], silent: false });
  const start = (n: number): Promise<Worker> =>
    new Promise((resolve, reject) => {
      const worker = cluster.fork({
        ...env,
        [WORKER_ENV]: String(n),
        KEYGATE_SPOOL_DIR: join(config.spoolDir, `worker-${n}`),
      });
      worker.on('message', (m: WorkerListening) => {
        if (m?.keygate !== 'listening') return;
        if (n === 1) first = m;
        if (db && !unannounce) unannounce = announceGateway(config.dataDir, { pid: process.pid, url: m.url });
        resolve(worker);
      });
      worker.once('exit', (code, signal) => {
        reject(new Error(`worker ${n} exited (${signal ?? code}) before it listened`));
        if (stopping) return;
        logger.warn('gateway worker exited; starting it again', { worker: n, code, signal });
        start(n).catch((error) => logger.error('gateway worker failed to start again', { worker: n, error }));
      });
    });
  try {
    // The first applies the migrations; the others find them done.
    await start(1);
    await Promise.all(Array.from({ length: count - 1 }, (_, i) => start(i + 2)));
    logger.info('keygate workers listening', { workers: count });
    if (first) {
      const { startMessage } = await import('./start-message');
      process.stdout.write(startMessage(config, { url: first.url, hasAccounts: first.hasAccounts ?? false }));
    }
    // Handlers for the whole run: a second Ctrl-C must not kill the primary (its workers would
    // exit with it, cutting open streams); later signals go on to the workers, which end their
    // grace on a repeated signal as one process does (a terminal's reaches them directly too,
    // within the same keypress).
    await new Promise<void>((resolve) => {
      let signalled = false;
      const onSignal = () => {
        if (!signalled) {
          signalled = true;
          return resolve();
        }
        for (const w of Object.values(cluster.workers ?? {})) if (w && !w.isDead()) w.process.kill('SIGTERM');
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    });
    logger.info('shutting down the workers; each writes its call log');
  } finally {
    stopping = true;
    await Promise.all(
      Object.values(cluster.workers ?? {}).map(
        (w) =>
          new Promise<void>((resolve) => {
            if (!w || w.isDead()) return resolve();
            w.once('exit', () => resolve());
            w.process.kill('SIGTERM');
          }),
      ),
    );
    unannounce?.();
    await db?.close();
  }
  return 0;
}
