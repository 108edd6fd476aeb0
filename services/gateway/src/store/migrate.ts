import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { inTransaction, type Sql } from './database';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));
const LOCK_ID = 0x6b657967; // 'keyg': one migrator at a time across instances

/**
 * The migration files in the order they run: the folder's ORDER file (the order they were added
 * in, the same on a fresh and an upgraded database), else by number (a folder a test made of a
 * few of them). A file missing from ORDER, or listed but missing, fails the start.
 */
export function migrationFiles(dir: string): string[] {
  const files = readdirSync(dir).filter((f) => /^\d+_.+\.sql$/.test(f));
  const orderFile = `${dir}/ORDER`;
  if (!existsSync(orderFile)) return files.sort();
  const order = readFileSync(orderFile, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const listed = new Set(order);
  const unlisted = files.filter((f) => !listed.has(f));
  const missing = order.filter((f) => !files.includes(f));
  if (unlisted.length || missing.length || listed.size !== order.length)
    throw new Error(
      `migrations/ORDER does not list each migration once: not listed ${unlisted.join(', ') || 'none'}; ` +
        `missing files ${missing.join(', ') || 'none'}.`,
    );
  return order;
}

/** The migration files the database has not recorded as applied (readiness). */
export async function pendingMigrations(sql: Sql, dir = MIGRATIONS_DIR): Promise<string[]> {
  const rows = await sql<{ version: number }[]>`select version from keygate_migrations`;
  const applied = new Set(rows.map((r) => r.version));
  return migrationFiles(dir).filter((f) => !applied.has(Number.parseInt(f, 10)));
}

/**
 * Applies the numbered .sql files not applied yet, in order, each in its own transaction.
 * Every step holds the advisory lock, the creation of the bookkeeping table too: two
 * instances creating it at once on a fresh schema collide in PostgreSQL's catalog.
 */
export async function migrate(sql: Sql, dir = MIGRATIONS_DIR): Promise<string[]> {
  // Every start but the first: all applied, one query and no lock.
  if ((await pendingMigrations(sql, dir).catch(() => null))?.length === 0) return [];
  const files = migrationFiles(dir);
  const locked = <T>(work: (tx: Sql) => Promise<T>) =>
    inTransaction(sql, async (tx) => {
      await tx`select pg_advisory_xact_lock(${LOCK_ID})`;
      return work(tx);
    });
  await locked(
    (tx) =>
      tx`create table if not exists keygate_migrations (version integer primary key, name text not null, applied_at timestamptz not null default now())`,
  );
  const applied: string[] = [];
  for (const file of files) {
    const version = Number.parseInt(file, 10);
    const done = await locked(async (tx) => {
      const [row] = await tx`select 1 from keygate_migrations where version = ${version}`;
      if (row) return false;
      await tx.unsafe(readFileSync(`${dir}/${file}`, 'utf8'));
      await tx`insert into keygate_migrations (version, name) values (${version}, ${file})`;
      return true;
    });
    if (done) applied.push(file);
  }
  return applied;
}
