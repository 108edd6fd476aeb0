import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config';
import { openDatabase, type Database } from '../src/store/database';
import { newDataDir } from './data-dir';
import { TEST_DATABASE_URL } from './harness';

// The test database as a running server sees it: the embedded one when TEST_DATABASE_URL is unset.
let db: Database;
let dataDir: string;
beforeAll(async () => {
  dataDir = newDataDir('keygate-dburl-');
  db = await openDatabase({ url: TEST_DATABASE_URL, dataDir, max: 1 });
});
afterAll(async () => {
  await db?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('a DATABASE_URL with libpq connection parameters in its query', () => {
  it('connects where the parameters say, not where the URL itself points, and sends them to no server as settings', async () => {
    const [me] = await db.sql<{ user: string; database: string; port: string }[]>`
      select current_user as user, current_database() as database, current_setting('port') as port`;
    // The URL's own user, port and database lead nowhere (port 1 on loopback refuses): only the
    // query's parameters can make this connection work.
    // The password stays in the URL (the embedded database has one; it goes with the query's user).
    const password = new URL(db.url).password;
    const url = `postgresql://nobody${password ? `:${password}` : ''}@127.0.0.1:1/nowhere?host=127.0.0.1&port=${me!.port}&user=${encodeURIComponent(me!.user)}&dbname=${encodeURIComponent(me!.database)}&application_name=keygate-dburl-test`;
    expect(
      loadConfig({ DATABASE_URL: url, KEYGATE_SECRET: randomBytes(32).toString('base64') }).databaseUrl,
    ).toBe(url);
    const other = await openDatabase({ url, dataDir: '', max: 1 });
    try {
      const [seen] = await other.sql<{ user: string; database: string; app: string }[]>`
        select current_user as user, current_database() as database,
               current_setting('application_name') as app`;
      // application_name is a server setting and still reaches the server as one.
      expect(seen).toEqual({ user: me!.user, database: me!.database, app: 'keygate-dburl-test' });
    } finally {
      await other.close();
    }
  });
});
