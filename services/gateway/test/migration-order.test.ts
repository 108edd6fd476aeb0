import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, type Store } from '../src/store';
import type { Sql } from '../src/store/database';
import { migrationFiles } from '../src/store/migrate';
import { openTestStore } from './harness';

const MIGRATIONS = fileURLToPath(new URL('../migrations/', import.meta.url));
/** The migrations of the release before ORDER was kept: a fresh database then ran them by number. */
const BEFORE_ORDER = 30;
const number = (file: string) => Number.parseInt(file, 10);

const opened: { store: Store; close(): Promise<void> }[] = [];
let fresh: Sql;
let upgraded: Sql;

beforeAll(async () => {
  for (let i = 0; i < 2; i++) opened.push(await openTestStore());
  fresh = opened[0]!.store.db.sql;
  upgraded = opened[1]!.store.db.sql;
  await migrate(fresh);
  // The earlier release as a fresh database of its day ran it (by number), then today's upgrade.
  const earlier = mkdtempSync(join(tmpdir(), 'keygate-migrations-'));
  for (const f of migrationFiles(MIGRATIONS).slice(0, BEFORE_ORDER))
    copyFileSync(join(MIGRATIONS, f), join(earlier, f));
  await migrate(upgraded, earlier);
  rmSync(earlier, { recursive: true, force: true });
  await migrate(upgraded);
}, 120_000);
afterAll(async () => {
  for (const o of opened) await o.close();
});

/** The schema as the catalog has it, in an order that does not depend on the order it was made in. */
async function catalog(sql: Sql) {
  const columns = await sql`
    select table_name, column_name, data_type, udt_name, is_nullable, column_default
    from information_schema.columns where table_schema = current_schema()
    order by table_name, column_name`;
  const indexes = await sql`
    select tablename, indexname, indexdef from pg_indexes where schemaname = current_schema()
    order by tablename, indexname`;
  const constraints = await sql`
    select conrelid::regclass::text as table_name, conname, pg_get_constraintdef(oid) as def
    from pg_constraint where connamespace = current_schema()::regnamespace
    order by 1, 2`;
  const functions = await sql`
    select proname, pg_get_function_identity_arguments(oid) as args from pg_proc
    where pronamespace = current_schema()::regnamespace order by 1, 2`;
  const strip = (rows: object[]) =>
    JSON.parse(JSON.stringify(rows).replaceAll(/kg_t_[a-z0-9]+\./g, '')) as unknown[];
  return {
    columns: strip(columns),
    indexes: strip(indexes),
    constraints: strip(constraints),
    functions: strip(functions),
  };
}

describe('migrations run in one order', () => {
  it('ORDER lists every migration once, and each one added since is numbered above all before it', () => {
    const order = migrationFiles(MIGRATIONS);
    for (let i = BEFORE_ORDER; i < order.length; i++)
      expect(number(order[i]!), order[i]).toBeGreaterThan(Math.max(...order.slice(0, i).map(number)));
  });

  it('a fresh database and one upgraded from the earlier release end with the same schema', async () => {
    const [a, b] = await Promise.all([catalog(fresh), catalog(upgraded)]);
    expect(a.columns.length).toBeGreaterThan(100);
    expect(b).toEqual(a);
    const applied = (sql: Sql) => sql<{ name: string }[]>`select name from keygate_migrations order by name`;
    expect((await applied(upgraded)).map((r) => r.name)).toEqual((await applied(fresh)).map((r) => r.name));
  });
});
