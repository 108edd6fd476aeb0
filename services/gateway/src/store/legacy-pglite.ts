import { renameSync } from 'node:fs';
import { legacyPgliteDir, StartupError } from '../lib/data-dir';
import { inTransaction, openDatabase } from './database';
import { migrate } from './migrate';

interface PGliteLike {
  query<T>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>;
  close(): Promise<void>;
}

/**
 * Copies a PGlite-era data dir (`pgdata`) into the embedded PostgreSQL, table by table as
 * JSON (so every type round-trips as PostgreSQL prints it), then sets the old folder aside.
 * PGlite is needed once for this and is not a dependency: it is imported if installed.
 */
export async function convertLegacyDataDir(dataDir: string, say: (line: string) => void): Promise<number> {
  const legacy = legacyPgliteDir(dataDir);
  if (!legacy) {
    say(`nothing to convert: ${dataDir} has no PGlite database (pgdata)`);
    return 0;
  }
  const specifier = '@electric-sql/pglite';
  const mod = (await import(specifier).catch(() => null)) as {
    PGlite: { create(dir: string): Promise<PGliteLike> };
  } | null;
  if (!mod)
    throw new StartupError(
      'converting reads the old database with PGlite once: run `pnpm add -w -D @electric-sql/pglite@0.5.14` in the Keygate repository, then `pnpm keygate migrate-data-dir` again',
    );
  const old = await mod.PGlite.create(legacy);
  const db = await openDatabase({ url: null, dataDir, owner: 'keygate migrate-data-dir', allowLegacy: true });
  let copied = 0;
  try {
    await migrate(db.sql);
    const tables = (
      await old.query<{ t: string }>(
        `select tablename as t from pg_tables where schemaname = 'public' and tablename <> 'keygate_migrations' order by 1`,
      )
    ).rows.map((r) => r.t);
    await inTransaction(db.sql, async (tx) => {
      // Rows arrive in table order, not in foreign-key order: the checks wait for the end.
      await tx`set local session_replication_role = replica`;
      for (const table of tables) {
        const cols = (
          await old.query<{ c: string }>(
            `select column_name as c from information_schema.columns where table_schema = 'public' and table_name = $1 order by ordinal_position`,
            [table],
          )
        ).rows.map((r) => r.c);
        const [{ json }] = (
          await old.query<{ json: string }>(
            `select coalesce(json_agg(t), '[]')::text as json from "${table.replaceAll('"', '""')}" t`,
          )
        ).rows as [{ json: string }];
        const rows = await tx`
          insert into ${tx(table)} (${tx(cols)}) select ${tx(cols)} from json_populate_recordset(null::${tx(table)}, ${json}::text::json)
          on conflict do nothing returning 1`;
        copied += rows.length;
        for (const col of cols) {
          const [seq] = await tx<
            { s: string | null }[]
          >`select pg_get_serial_sequence(${table}, ${col}) as s`;
          if (seq?.s)
            await tx`select setval(${seq.s}, greatest((select max(${tx(col)}) from ${tx(table)}), 1))`;
        }
      }
    });
  } finally {
    await old.close();
    await db.close();
  }
  const aside = `${legacy}.pglite-${new Date().toISOString().slice(0, 10)}`;
  renameSync(legacy, aside);
  say(`converted ${copied} rows from PGlite into the embedded PostgreSQL; the old copy is in ${aside}`);
  return 0;
}
