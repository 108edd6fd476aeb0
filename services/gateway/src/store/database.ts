import { join } from 'node:path';
import postgres from 'postgres';
import {
  embeddedClusterDir,
  legacyPgliteDir,
  lockDataDir,
  persistentSecret,
  StartupError,
} from '../lib/data-dir';
import { startCluster, type EmbeddedCluster } from './embedded-postgres';

export type Sql = postgres.Sql<{}>;

/** Per pool: who in this process hears an invalidation as soon as its transaction commits. */
const committedListeners = new WeakMap<Sql, (payload: string) => void>();
/** Per open transaction: the invalidations it sent, delivered to its pool's listener on commit. */
const sentInTransaction = new WeakMap<Sql, string[]>();

/**
 * Delivers the invalidations a transaction of `sql` sends to `listener` in this process as soon as
 * it commits, before its caller answers: NOTIFY reaches this process's LISTEN connection a moment
 * later, and a call in between would still find the old limit. Returns the way to stop.
 */
export function onCommitted(sql: Sql, listener: (payload: string) => void): () => void {
  committedListeners.set(sql, listener);
  return () => {
    if (committedListeners.get(sql) === listener) committedListeners.delete(sql);
  };
}

/** Notes an invalidation sent in `tx`, for the local listener (see `onCommitted`). */
export function sentIn(tx: Sql, payload: string): void {
  sentInTransaction.get(tx)?.push(payload);
}

/** Runs `work` in a transaction; the transaction takes the same queries as the pool (postgres.js only types them apart). */
export async function inTransaction<T>(sql: Sql, work: (t: Sql) => Promise<T>): Promise<T> {
  const listener = committedListeners.get(sql);
  if (!listener) return sql.begin((tx) => work(tx as unknown as Sql)) as Promise<T>;
  const sent: string[] = [];
  const out = (await sql.begin((tx) => {
    sentInTransaction.set(tx as unknown as Sql, sent);
    return work(tx as unknown as Sql);
  })) as T;
  for (const payload of sent) listener(payload);
  return out;
}

export interface Database {
  sql: Sql;
  /**
   * One connection of its own, for readiness: a ping that waited behind the calls filling the
   * pool would call a busy instance down, and a balancer would drop every busy instance at once.
   * Connected on its first query.
   */
  probe: Sql;
  /** The URL a second client (such as a LISTEN connection) can use. */
  url: string;
  /** The schema the client works in, when not the default (test runs). */
  schema?: string;
  embedded: boolean;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** postgres:// URL; null starts the embedded PostgreSQL in `dataDir`. */
  url: string | null;
  dataDir: string;
  /** Isolates a test run in its own schema. */
  schema?: string;
  max?: number;
  /** Who holds the embedded data dir, named to a process that finds it taken. */
  owner?: string;
  /** Opens beside a PGlite-era `pgdata` (only the conversion does). */
  allowLegacy?: boolean;
}

const POOL_SIZE = 10;

/** The connection parameters libpq takes in a URL's query that the driver would send to the server as settings. */
const TARGET_PARAMS = { host: 'host', port: 'port', user: 'user', dbname: 'database' } as const;

/**
 * A postgres:// URL as the driver takes it. libpq (psql, pg_dump) also reads `host`, `port`,
 * `user` and `dbname` from the query, which is how a URL names a Unix socket directory
 * (`postgresql://localhost/keygate?host=/var/run/postgresql`); the driver would pass them to the
 * server as settings, and the server refuses the connection. They become driver options here,
 * and override the URL's own host, port, user and database as they do in libpq (libpq's
 * connection URIs: https://www.postgresql.org/docs/current/libpq-connect.html, read 2026-11-28).
 */
export function driverTarget(url: string): {
  url: string;
  options: { host?: string; port?: number; user?: string; database?: string };
} {
  const parsed = new URL(url);
  const options: { host?: string; port?: number; user?: string; database?: string } = {};
  for (const [param, option] of Object.entries(TARGET_PARAMS)) {
    const value = parsed.searchParams.get(param);
    if (value === null) continue;
    parsed.searchParams.delete(param);
    if (option === 'port') {
      const port = Number(value);
      if (!Number.isInteger(port) || port < 1 || port > 65_535)
        throw new StartupError(`DATABASE_URL: port=${value} is not a port number (1 to 65535).`);
      options.port = port;
    } else options[option] = value;
  }
  if (Object.keys(options).length === 0) return { url, options };
  return { url: parsed.toString(), options };
}

/** The driver's settings for every client of the gateway's database (the call log's thread opens its own). */
export function clientOptions(schema?: string) {
  return {
    onnotice: () => {},
    idle_timeout: 60,
    // The driver's own reconnect delay reaches 20 s within a few failures: a stopped database
    // would hold every query that long after it is back. Seconds, capped at 2.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 2),
    ...(schema ? { connection: { search_path: schema } } : {}),
  };
}

/** One connection of its own, outside any pool (the call log's thread opens one). */
export function connectOne(url: string, schema?: string): Sql {
  const target = driverTarget(url);
  return postgres(target.url, { ...target.options, ...clientOptions(schema), max: 1 });
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  if (opts.url) return connect(opts.url, opts, false, async () => {});
  return openEmbedded(opts);
}

async function connect(
  url: string,
  opts: OpenOptions,
  embedded: boolean,
  onClose: () => Promise<void>,
): Promise<Database> {
  const max = opts.max ?? POOL_SIZE;
  const target = driverTarget(url);
  if (opts.schema) {
    const admin = postgres(target.url, { ...target.options, max: 1, onnotice: () => {} });
    await admin`create schema if not exists ${admin(opts.schema)}`;
    await admin.end();
  }
  const sql = postgres(target.url, { ...target.options, ...clientOptions(opts.schema), max });
  // Fail fast with a clear message rather than on the first request.
  await sql`select 1`;
  const probe = postgres(target.url, { ...target.options, ...clientOptions(opts.schema), max: 1 });
  return {
    sql,
    probe,
    url,
    ...(opts.schema ? { schema: opts.schema } : {}),
    embedded,
    async close() {
      await Promise.all([sql.end({ timeout: 5 }), probe.end({ timeout: 5 })]);
      await onClose();
    },
  };
}

/**
 * A real PostgreSQL (18, from the embedded-postgres package) whose cluster lives in
 * `<dataDir>/postgres`, on a free loopback port for this start, stopped on close. The data
 * dir's lock keeps every other process out while it runs.
 */
async function openEmbedded(opts: OpenOptions): Promise<Database> {
  const legacy = legacyPgliteDir(opts.dataDir);
  if (legacy && !opts.allowLegacy) throw new LegacyDataDirError(opts.dataDir);
  const release = lockDataDir(opts.dataDir, opts.owner ?? 'another keygate process');
  let cluster: EmbeddedCluster | null = null;
  try {
    cluster = await startCluster(
      embeddedClusterDir(opts.dataDir),
      persistentSecret(opts.dataDir, 'database-password'),
    );
    const running = cluster;
    return await connect(running.url, opts, true, async () => {
      await running.stop();
      release();
    });
  } catch (err) {
    await cluster?.stop();
    release();
    throw err;
  }
}

/** A data dir the previous embedded engine (PGlite) wrote, not converted yet. */
export class LegacyDataDirError extends StartupError {
  constructor(readonly dataDir: string) {
    super(
      `${dataDir} holds a database written by the previous embedded engine (PGlite), which this version no longer runs. ` +
        `Convert it once with: keygate migrate-data-dir (it keeps ${join(dataDir, 'pgdata')} aside).`,
    );
  }
}
