import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config';
import { randomBase62 } from '../src/lib/ids';
import { createLogger } from '../src/lib/logger';
import { startGateway } from '../src/server';
import { migrate, openDatabase, type Database } from '../src/store';
import type { Sql } from '../src/store/database';
import { MIGRATIONS_DIR, migrationFiles, pendingMigrations } from '../src/store/migrate';
import { migrateUpTo, withMigrations } from '../src/store/restore';
import { newDataDir } from './data-dir';
import { api, callModel, type Stack, startStack } from './harness';
import { copySchemaRows } from './kit/copy-schema';
import { assertEveryTableHasRows, type EveryTableFixture, seedEveryTable } from './kit/seed-every-table';
import { tableColumns, tableHashes, tableNames } from './kit/table-hashes';
import { ALLOW_LOOPBACK_RECEIVERS } from './webhook-receiver';

/**
 * The previous release: the first entries of migrations/ORDER at commit ef44baf (30, every
 * migration file then). Raise it to ORDER's length at each release.
 */
const PREVIOUS_RELEASE = 30;
const previous = migrationFiles(MIGRATIONS_DIR).slice(0, PREVIOUS_RELEASE);

let stack: Stack;
let fx: EveryTableFixture;
let upgraded: Database;
let before: {
  columns: Awaited<ReturnType<typeof columnCatalog>>;
  names: Record<string, string[]>;
  hashes: Awaited<ReturnType<typeof tableHashes>>;
  functions: string[];
};
let applied: string[];
const schema = `kg_t_${randomBase62(10).toLowerCase()}`;
const scratch = mkdtempSync(join(tmpdir(), 'keygate-upgrade-'));

/** Every column of the schema with what an instance writing rows relies on. */
async function columnCatalog(sql: Sql) {
  const rows = await sql<
    { table: string; column: string; type: string; nullable: boolean; defaulted: boolean }[]
  >`
    select c.table_name as table, c.column_name as column, c.udt_name as type,
      c.is_nullable = 'YES' as nullable,
      (c.column_default is not null or c.is_identity = 'YES' or c.is_generated = 'ALWAYS') as defaulted
    from information_schema.columns c join pg_class t on t.relname = c.table_name
      and t.relnamespace = current_schema()::regnamespace and not t.relispartition
    where c.table_schema = current_schema()`;
  return new Map(rows.map((r) => [`${r.table}.${r.column}`, r]));
}

async function functions(sql: Sql): Promise<string[]> {
  const rows = await sql<{ f: string }[]>`
    select proname || '(' || pg_get_function_identity_arguments(oid) || ')' as f from pg_proc
    where pronamespace = current_schema()::regnamespace`;
  return rows.map((r) => r.f);
}

const report = (base: string) =>
  api(
    base,
    '/v1/organizations/usage_report/messages?starting_at=2025-01-01T00:00:00Z&bucket_width=1d&group_by[]=api_key_id&group_by[]=model&limit=31',
    { key: fx.acct.adminKey },
  );

/**
 * A database at the previous release holding a row in every table: the rows the real app made
 * (every-table seeder) copied into a schema migrated to that release, then upgraded to this one.
 */
beforeAll(async () => {
  stack = await startStack({ ...ALLOW_LOOPBACK_RECEIVERS });
  fx = await seedEveryTable(stack);
  await assertEveryTableHasRows(stack);
  upgraded = await openDatabase({ url: stack.gateway.store.db.url, dataDir: scratch, schema, max: 2 });
  const sql = upgraded.sql;
  expect(await migrateUpTo(sql, previous)).toEqual(previous);
  await copySchemaRows(sql, stack.schema);
  const counts = await tableHashes(sql);
  expect(
    Object.entries(counts)
      .filter(([, t]) => t.rows === 0)
      .map(([name]) => name),
  ).toEqual([]);
  before = {
    columns: await columnCatalog(sql),
    names: await tableColumns(sql),
    hashes: counts,
    functions: await functions(sql),
  };
  applied = await migrate(sql);
}, 60_000);

afterAll(async () => {
  await upgraded?.close();
  if (stack) {
    const sql = postgres(stack.gateway.store.db.url, { max: 1, onnotice: () => {} });
    await sql`drop schema if exists ${sql(schema)} cascade`;
    await sql.end();
  }
  await stack?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe('an upgrade from the previous release', () => {
  it('applies the migrations since, and every row of before is there with the values it had', async () => {
    expect(applied).toEqual(migrationFiles(MIGRATIONS_DIR).slice(PREVIOUS_RELEASE));
    // The bookkeeping of migrations grows by the ones applied; every other table is as it was.
    const { keygate_migrations: ran, ...rest } = await tableHashes(upgraded.sql, before.names);
    const { keygate_migrations: _, ...was } = before.hashes;
    expect(rest).toEqual(was);
    expect(ran!.rows).toBe(migrationFiles(MIGRATIONS_DIR).length);
  });

  it('is additive, so instances of the previous release keep working (and ready) while the new one migrates', async () => {
    const now = await columnCatalog(upgraded.sql);
    const problems: string[] = [];
    for (const [name, was] of before.columns) {
      const is = now.get(name);
      if (!is) problems.push(`${name} was dropped or renamed`);
      else if (is.type !== was.type) problems.push(`${name} changed type ${was.type} → ${is.type}`);
      else if (was.nullable && !is.nullable && !is.defaulted) problems.push(`${name} became required`);
    }
    for (const [name, is] of now) {
      const table = name.split('.')[0]!;
      // A column the old code does not write must take a value of its own.
      if (!before.columns.has(name) && before.names[table] && !is.nullable && !is.defaulted)
        problems.push(`${name} is new, required, and has no default`);
    }
    const fnNow = new Set(await functions(upgraded.sql));
    for (const f of before.functions)
      if (!fnNow.has(f)) problems.push(`function ${f} was dropped or changed its arguments`);
    expect(problems).toEqual([]);
    expect(await tableNames(upgraded.sql)).toEqual(expect.arrayContaining(Object.keys(before.names)));
    // An old instance's readiness counts its own migrations only: all applied.
    expect(await withMigrations(previous, (dir) => pendingMigrations(upgraded.sql, dir))).toEqual([]);
  });

  it('a gateway on the upgraded database serves the keys of before and reports what the original reports', async () => {
    const config = loadConfig({
      PORT: '0',
      KEYGATE_DATA_DIR: newDataDir('keygate-upgraded-'),
      KEYGATE_UPSTREAM_URL: stack.emulator.url,
      KEYGATE_SECRET: stack.config.secret!,
      KEYGATE_OPERATOR_TOKEN: stack.config.operatorToken!,
      KEYGATE_FLUSH_INTERVAL_MS: '10',
      DATABASE_URL: stack.gateway.store.db.url,
    });
    const gateway = await startGateway(config, { logger: createLogger('warn', () => {}), schema });
    try {
      const [original, after] = [await report(stack.gateway.url), await report(gateway.url)];
      expect(after.status).toBe(200);
      expect(after.body).toEqual(original.body);
      expect((await callModel(gateway.url, fx.aliceKey.secret)).status).toBe(200);
      expect((await callModel(gateway.url, fx.testKey.secret)).status).toBe(200);
    } finally {
      await gateway.close();
      rmSync(config.dataDir, { recursive: true, force: true });
    }
  }, 30_000);
});
