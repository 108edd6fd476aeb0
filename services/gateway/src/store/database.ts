import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';

export type Sql = postgres.Sql<{}>;

/** Runs `work` in a transaction; the transaction takes the same queries as the pool (postgres.js only types them apart). */
export function inTransaction<T>(sql: Sql, work: (t: Sql) => Promise<T>): Promise<T> {
  return sql.begin((tx) => work(tx as unknown as Sql)) as Promise<T>;
}

export interface Database {
  sql: Sql;
  /** The URL a second client (such as a LISTEN connection) can use. */
  url: string;
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
}

const POOL_SIZE = 10;

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  if (opts.url) return connect(opts.url, opts, false, async () => {});
  return openEmbedded(opts);
}

async function connect(url: string, opts: OpenOptions, embedded: boolean, onClose: () => Promise<void>): Promise<Database> {
  const max = opts.max ?? POOL_SIZE;
  if (opts.schema) {
    const admin = postgres(url, { max: 1, onnotice: () => {} });
    await admin`create schema if not exists ${admin(opts.schema)}`;
    await admin.end();
  }
  const sql = postgres(url, {
    max,
    onnotice: () => {},
    idle_timeout: 60,
    // The driver's own reconnect delay reaches 20 s within a few failures: a stopped database
    // would hold every query that long after it is back. Seconds, capped at 2.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 2),
    ...(opts.schema ? { connection: { search_path: opts.schema } } : {}),
  });
  // Fail fast with a clear message rather than on the first request.
  await sql`select 1`;
  return {
    sql,
    url,
    embedded,
    async close() {
      await sql.end({ timeout: 5 });
      await onClose();
    },
  };
}

/**
 * PGlite (PostgreSQL compiled to WebAssembly, file-backed) behind its socket server, so the
 * gateway keeps one SQL dialect and one driver. PGlite is a single session: the socket
 * server queues each protocol message, not each query, so two connections with queries in
 * flight interleave Bind and Execute and break each other ("portal does not exist", seen
 * here). Hence one connection: postgres.js pipelines on it, and PGlite runs one query at a
 * time anyway. Other processes reach this database through the gateway's operator API.
 */
async function openEmbedded(opts: OpenOptions): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  const dir = join(opts.dataDir, 'pgdata');
  mkdirSync(dir, { recursive: true });
  const db = await PGlite.create(dir);
  const max = 1;
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: max + 2 });
  await server.start();
  const url = `postgres://postgres@${server.getServerConn()}/postgres`;
  try {
    return await connect(url, { ...opts, max }, true, async () => {
      await server.stop();
      await db.close();
    });
  } catch (err) {
    await server.stop();
    await db.close();
    throw err;
  }
}
