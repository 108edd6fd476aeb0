import { once } from 'node:events';
import { copyFileSync, createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream';
import { finished } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { schemaTables } from './backup';
import {
  BACKUP_FORMAT,
  BACKUP_VERSION,
  BackupError,
  BackupReader,
  countRows,
  type BackupHeader,
  type BackupTrailer,
} from './backup-file';
import { inTransaction, type Sql } from './database';
import { migrate, MIGRATIONS_DIR, migrationFiles } from './migrate';

/** Runs `work` on a folder of exactly `names` of the migrations in `dir`, in their ORDER. */
export async function withMigrations<T>(
  names: string[],
  work: (subset: string) => Promise<T>,
  dir = MIGRATIONS_DIR,
): Promise<T> {
  const wanted = new Set(names);
  const files = migrationFiles(dir).filter((f) => wanted.has(f));
  const subset = mkdtempSync(join(tmpdir(), 'keygate-migrations-'));
  try {
    for (const f of files) copyFileSync(join(dir, f), join(subset, f));
    writeFileSync(join(subset, 'ORDER'), `${files.join('\n')}\n`);
    return await work(subset);
  } finally {
    rmSync(subset, { recursive: true, force: true });
  }
}

/** Applies exactly `names` of the migrations in `dir`, as a database of that release had them. */
export const migrateUpTo = (sql: Sql, names: string[], dir = MIGRATIONS_DIR) =>
  withMigrations(names, (subset) => migrate(sql, subset), dir);

export interface RestoreSummary {
  header: BackupHeader;
  rows: Record<string, number>;
  /** With --force: the tables the schema held before, dropped with it. */
  dropped: string[];
  /** Migrations this build applied after the backup's data was in. */
  migrated: string[];
}

function checkHeader(header: BackupHeader, known: string[]): void {
  if (header?.format !== BACKUP_FORMAT)
    throw new BackupError('not a Keygate backup file (its header names no keygate-backup format)');
  if (header.version > BACKUP_VERSION)
    throw new BackupError(
      `the backup is in format ${header.version}; this build reads format ${BACKUP_VERSION}: restore it with a newer Keygate`,
    );
  const unknown = header.migrations.filter((m) => !known.includes(m));
  if (unknown.length)
    throw new BackupError(
      `the backup was made by a newer Keygate: it holds migrations this build does not know (${unknown.join(', ')}); restore it with that version or a newer one`,
    );
}

/** The first instant (UTC) of a `calls_pYYYYMM` partition's month. */
const monthOf = (partition: string) =>
  new Date(`${partition.slice(7, 11)}-${partition.slice(11, 13)}-01T00:00:00Z`);

/**
 * Restores a backup into the current schema, which must hold no table (with `force`, the schema
 * is dropped with everything in it and made again). The schema is migrated to exactly the
 * backup's migrations, its rows are loaded in one transaction in the file's order (parents
 * before the tables that refer to them), its sequences set to the backup's values, and then the
 * migrations this build has beyond the backup's are applied.
 */
export async function restoreBackup(
  sql: Sql,
  input: AsyncIterable<Buffer>,
  opts: { force?: boolean; migrationsDir?: string } = {},
): Promise<RestoreSummary> {
  const dir = opts.migrationsDir ?? MIGRATIONS_DIR;
  const reader = new BackupReader(input[Symbol.asyncIterator]());
  const header = await reader.json<BackupHeader>();
  checkHeader(header, migrationFiles(dir));

  const dropped = (await schemaTables(sql)).map((t) => t.name);
  const [{ schema } = { schema: '' }] = await sql<{ schema: string }[]>`select current_schema() as schema`;
  if (dropped.length && !opts.force)
    throw new BackupError(
      `schema ${schema} is not empty (${dropped.length} tables, such as ${dropped.slice(0, 3).join(', ')}): restore into an empty database or schema, or pass --force to drop schema ${schema} with everything in it first`,
    );
  if (dropped.length) {
    await sql`drop schema ${sql(schema)} cascade`;
    await sql`create schema ${sql(schema)}`;
  }
  await migrateUpTo(sql, header.migrations, dir);

  const rows = await inTransaction(sql, async (tx) => {
    const present = new Set((await schemaTables(tx)).map((t) => t.name));
    const missing = header.tables.filter((t) => !present.has(t.name)).map((t) => t.name);
    if (missing.length)
      throw new BackupError(`the backup's tables ${missing.join(', ')} are not in its migrations' schema`);
    // The migrations' own rows (plans, their bookkeeping) give way to the backup's.
    await tx`truncate ${tx([...present])}`;
    for (const p of header.partitions) await tx`select keygate_ensure_calls_partition(${monthOf(p)})`;
    // Triggers made their rows when the backed-up rows were first written; those rows are in the backup.
    const triggered = await tx<{ name: string }[]>`
      select distinct c.relname as name from pg_trigger g join pg_class c on c.oid = g.tgrelid
      where c.relnamespace = current_schema()::regnamespace and not g.tgisinternal`;
    for (const t of triggered) await tx`alter table ${tx(t.name)} disable trigger user`;
    const loaded: Record<string, number> = {};
    for (const table of header.tables) {
      const copy = await tx`copy ${tx(table.name)} (${tx(table.columns)}) from stdin`.writable();
      let n = 0;
      try {
        for await (const piece of reader.section()) {
          n += countRows(piece);
          if (!copy.write(piece)) await once(copy, 'drain');
        }
      } catch (err) {
        // The file failed mid-table: the server is told the COPY failed (CopyFail), so the
        // transaction rolls back; the error that matters is this one.
        copy.on('error', () => {});
        copy.destroy(err as Error);
        throw err;
      }
      copy.end();
      await finished(copy);
      loaded[table.name] = n;
    }
    const trailer = await reader.json<BackupTrailer>();
    if (trailer?.end !== true) throw new BackupError('the backup file has no end record: it is incomplete');
    for (const [name, n] of Object.entries(trailer.rows))
      if (loaded[name] !== n)
        throw new BackupError(`table ${name}: the backup says ${n} rows, its section held ${loaded[name]}`);
    for (const t of triggered) await tx`alter table ${tx(t.name)} enable trigger user`;
    for (const s of header.sequences)
      await tx`select setval(format('%I', ${s.name}::text)::regclass, ${s.last_value}::bigint, ${s.is_called})`;
    return loaded;
  });
  const migrated = await migrate(sql, dir);
  return { header, rows, dropped, migrated };
}

/** `restoreBackup` from a file `keygate backup` wrote. */
export async function restoreBackupFile(
  sql: Sql,
  path: string,
  opts: { force?: boolean; migrationsDir?: string } = {},
): Promise<RestoreSummary> {
  // An error of the file or of gzip (a truncated file) ends the read with that error.
  const input = pipeline(createReadStream(path), createGunzip(), () => {});
  try {
    return await restoreBackup(sql, input, opts);
  } catch (err) {
    const code = String((err as { code?: string }).code ?? '');
    if (code.startsWith('Z_') || code === 'ERR_STREAM_PREMATURE_CLOSE')
      throw new BackupError(
        `${path} is damaged or incomplete (${(err as Error).message}); nothing was loaded`,
      );
    throw err;
  } finally {
    input.destroy();
  }
}
