import { readdirSync, rmSync } from 'node:fs';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { randomBase62 } from '../src/lib/ids';
import { migrate, openDatabase, type Database } from '../src/store';
import { TEST_DATABASE_URL } from './harness';
import { newDataDir } from './data-dir';

const MIGRATIONS = readdirSync(new URL('../migrations/', import.meta.url))
  .filter((f) => f.endsWith('.sql'))
  .sort();
const dataDir = newDataDir('keygate-migrate-');
const opened: Database[] = [];
const schemas: string[] = [];

afterAll(async () => {
  for (const db of opened) await db.close();
  if (TEST_DATABASE_URL) {
    const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
    for (const schema of schemas) await sql`drop schema if exists ${sql(schema)} cascade`;
    await sql.end();
  }
  rmSync(dataDir, { recursive: true, force: true });
});

// Two instances starting at once against one fresh database: the embedded database has one
// session, so the race only exists on a real PostgreSQL.
describe.skipIf(!TEST_DATABASE_URL)('migrate', () => {
  it('instances migrating one fresh schema at once all succeed, and each file is applied once', async () => {
    for (let round = 0; round < 5; round++) {
      const schema = `kg_t_${randomBase62(10).toLowerCase()}`;
      schemas.push(schema);
      const instances: Database[] = [];
      for (let i = 0; i < 3; i++)
        instances.push(await openDatabase({ url: TEST_DATABASE_URL!, dataDir, schema, max: 2 }));
      opened.push(...instances);
      const applied = await Promise.all(instances.map((db) => migrate(db.sql)));
      expect(applied.flat().sort()).toEqual(MIGRATIONS);
      const rows = await instances[0]!.sql<
        { name: string }[]
      >`select name from keygate_migrations order by version`;
      expect(rows.map((r) => r.name)).toEqual(MIGRATIONS);
    }
  });
});
