import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';

export type Sql = postgres.Sql<{}>;

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
 * gateway keeps one SQL dialect and one driver. The socket server must admit at least as
 * many connections as the pool, plus one for LISTEN.
 */
async function openEmbedded(opts: OpenOptions): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  const dir = join(opts.dataDir, 'pgdata');
  mkdirSync(dir, { recursive: true });
  const db = await PGlite.create(dir);
  const max = opts.max ?? 4;
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
