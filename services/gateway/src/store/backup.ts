import { once } from 'node:events';
import { createWriteStream, renameSync, rmSync, statSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import {
  BACKUP_FORMAT,
  BACKUP_VERSION,
  BackupError,
  countRows,
  SECTION_END,
  type BackupHeader,
  type BackupTable,
  type BackupTrailer,
} from './backup-file';
import { inTransaction, type Sql } from './database';

/**
 * The tables of the current schema a backup holds (partitioned parents, not their partitions),
 * each after the tables its foreign keys refer to, so a restore loads them in this order.
 */
export async function schemaTables(sql: Sql): Promise<BackupTable[]> {
  const rows = await sql<{ name: string; columns: string[]; refers: string[] }[]>`
    select c.relname as name,
      array(select a.attname::text from pg_attribute a
            where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
            order by a.attnum) as columns,
      array(select distinct f.confrelid::regclass::text from pg_constraint f
            where f.conrelid = c.oid and f.contype = 'f' and f.confrelid <> c.oid) as refers
    from pg_class c
    where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
    order by c.relname`;
  const ordered: BackupTable[] = [];
  const placed = new Set<string>();
  // regclass text is schema-qualified when the schema is not on the search path.
  const bare = (name: string) => name.replace(/^.*\./, '').replaceAll('"', '');
  while (ordered.length < rows.length) {
    const next = rows.filter((r) => !placed.has(r.name) && r.refers.every((t) => placed.has(bare(t))));
    if (next.length === 0) throw new BackupError('the foreign keys between the tables form a cycle');
    for (const r of next) {
      placed.add(r.name);
      ordered.push({ name: r.name, columns: r.columns });
    }
  }
  return ordered;
}

async function callPartitions(sql: Sql): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    select c.relname as name from pg_inherits i
    join pg_class c on c.oid = i.inhrelid
    where i.inhparent = to_regclass('calls') and c.relname ~ '^calls_p[0-9]{6}$'
    order by 1`;
  return rows.map((r) => r.name);
}

async function sequences(sql: Sql): Promise<BackupHeader['sequences']> {
  const names = await sql<{ name: string }[]>`
    select relname as name from pg_class
    where relnamespace = current_schema()::regnamespace and relkind = 'S' order by 1`;
  const out: BackupHeader['sequences'] = [];
  for (const { name } of names) {
    const [row] = await sql<{ last_value: string; is_called: boolean }[]>`
      select last_value::text, is_called from ${sql(name)}`;
    out.push({ name, ...row! });
  }
  return out;
}

async function write(out: Writable, data: Buffer | string): Promise<void> {
  if (!out.write(data)) await once(out, 'drain');
}

export interface BackupSummary {
  header: BackupHeader;
  rows: Record<string, number>;
}

/**
 * Writes every table of the current schema to `out` as one consistent snapshot (a REPEATABLE
 * READ, READ ONLY transaction: the gateway keeps serving and writing meanwhile), streamed table
 * by table with COPY. `out` is left open for the caller to end.
 */
export async function writeBackup(sql: Sql, out: Writable, now = new Date()): Promise<BackupSummary> {
  return inTransaction(sql, async (tx) => {
    await tx`set transaction isolation level repeatable read, read only`;
    const [found] = await tx<{ schema: string; migrations: boolean; version: string }[]>`
      select current_schema() as schema, to_regclass('keygate_migrations') is not null as migrations,
        current_setting('server_version') as version`;
    if (!found?.migrations)
      throw new BackupError(`no Keygate database in schema ${found?.schema ?? '(none)'}: nothing to back up`);
    const migrations = await tx<{ name: string }[]>`
      select name from keygate_migrations order by applied_at, version`;
    const tables = await schemaTables(tx);
    const header: BackupHeader = {
      format: BACKUP_FORMAT,
      version: BACKUP_VERSION,
      created_at: now.toISOString(),
      schema: found.schema,
      server_version: found.version,
      migrations: migrations.map((m) => m.name),
      tables,
      partitions: await callPartitions(tx),
      sequences: await sequences(tx),
    };
    await write(out, `${JSON.stringify(header)}\n`);
    const rows: Record<string, number> = {};
    for (const table of tables) {
      let n = 0;
      const copy = await tx`copy (select ${tx(table.columns)} from ${tx(table.name)}) to stdout`.readable();
      for await (const chunk of copy as AsyncIterable<Buffer>) {
        n += countRows(chunk);
        await write(out, chunk);
      }
      await write(out, SECTION_END);
      rows[table.name] = n;
    }
    await write(out, `${JSON.stringify({ end: true, rows } satisfies BackupTrailer)}\n`);
    return { header, rows };
  });
}

/**
 * A backup written to `path` (gzip, owner-only: it holds key hashes and sealed provider keys),
 * through `path.partial` renamed when complete, so a failed backup leaves no file that looks whole.
 */
export async function writeBackupFile(sql: Sql, path: string): Promise<BackupSummary & { bytes: number }> {
  const partial = `${path}.partial`;
  const gzip = createGzip();
  const written = pipeline(gzip, createWriteStream(partial, { mode: 0o600 }));
  try {
    const summary = await writeBackup(sql, gzip);
    gzip.end();
    await written;
    renameSync(partial, path);
    return { ...summary, bytes: statSync(path).size };
  } catch (err) {
    gzip.destroy();
    await written.catch(() => {});
    rmSync(partial, { force: true });
    throw err;
  }
}
