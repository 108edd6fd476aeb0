import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Sql } from './database';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));
const LOCK_ID = 0x6b657967; // 'keyg': one migrator at a time across instances

/** Applies the numbered .sql files not applied yet, in order, each in its own transaction. */
export async function migrate(sql: Sql, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = readdirSync(dir).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  const applied: string[] = [];
  await sql`create table if not exists keygate_migrations (version integer primary key, name text not null, applied_at timestamptz not null default now())`;
  for (const file of files) {
    const version = Number.parseInt(file, 10);
    const done = await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${LOCK_ID})`;
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
