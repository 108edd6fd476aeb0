import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { gunzipSync, gzipSync } from 'node:zlib';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config';
import { randomBase62 } from '../src/lib/ids';
import { createLogger } from '../src/lib/logger';
import { startGateway, type Gateway } from '../src/server';
import { openDatabase, type Database } from '../src/store';
import { newDataDir } from './data-dir';
import { api, callModel, type Stack, startStack, TEST_DATABASE_URL } from './harness';
import { freePort } from './kit/free-port';
import { childEnv, keygateCommand, spawnGateway } from './kit/gateway';
import { assertEveryTableHasRows, type EveryTableFixture, seedEveryTable } from './kit/seed-every-table';
import { sequenceValues, tableHashes } from './kit/table-hashes';
import { ALLOW_LOOPBACK_RECEIVERS } from './webhook-receiver';

let stack: Stack;
let fx: EveryTableFixture;
let files: string;
const opened: Database[] = [];
const schemas: string[] = [];

function keygate(args: string[], env: Record<string, string>) {
  const command = keygateCommand(args);
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(
      command.file,
      command.args,
      { env: childEnv({ KEYGATE_LOG_LEVEL: 'warn', ...env }), timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/** The environment of the CLI on a schema of the external database. */
function external(schema: string): Record<string, string> {
  schemas.push(schema);
  return {
    DATABASE_URL: TEST_DATABASE_URL ?? stack.gateway.store.db.url,
    KEYGATE_DB_SCHEMA: schema,
    KEYGATE_SECRET: stack.config.secret!,
  };
}

async function openSchema(schema: string): Promise<Database> {
  const db = await openDatabase({
    url: TEST_DATABASE_URL ?? stack.gateway.store.db.url,
    dataDir: files,
    schema,
    max: 2,
  });
  opened.push(db);
  return db;
}

/** The stack's tables as they are now, every call it took written. */
async function sourceNow() {
  await stack.gateway.writer.flush();
  await stack.gateway.flushLastUsed();
  return tableHashes(stack.gateway.store.db.sql);
}

const report = (base: string) =>
  api(
    base,
    '/v1/organizations/usage_report/messages?starting_at=2025-01-01T00:00:00Z&bucket_width=1d&group_by[]=api_key_id&group_by[]=model&limit=31',
    {
      key: fx.acct.adminKey,
    },
  );

beforeAll(async () => {
  files = mkdtempSync(join(tmpdir(), 'keygate-backups-'));
  stack = await startStack({ ...ALLOW_LOOPBACK_RECEIVERS });
  fx = await seedEveryTable(stack);
  await assertEveryTableHasRows(stack);
}, 60_000);

afterAll(async () => {
  for (const db of opened) await db.close();
  if (stack) {
    const sql = postgres(TEST_DATABASE_URL ?? stack.gateway.store.db.url, { max: 1, onnotice: () => {} });
    for (const s of schemas) if (s !== stack.schema) await sql`drop schema if exists ${sql(s)} cascade`;
    await sql.end();
  }
  await stack?.close();
  rmSync(files, { recursive: true, force: true });
});

describe('keygate backup and restore', () => {
  it('an external database: backed up while it serves, restored into a fresh schema table for table, and a gateway on it serves the old keys', async () => {
    const file = join(files, 'external.kgbak');
    const source = await sourceNow();
    const taken = await keygate(['backup', '--out', file], external(stack.schema));
    expect(taken.stderr).toBe('');
    expect(taken.code).toBe(0);
    expect(taken.stdout).toMatch(/backed up .*: \d+ tables, \d+ rows, \d+ migrations/);
    // Still serving.
    expect((await callModel(stack.gateway.url, fx.appKey.secret)).status).toBe(200);

    const target = `kg_t_${randomBase62(10).toLowerCase()}`;
    const restored = await keygate(['restore', '--from', file], external(target));
    expect(restored.stderr).toBe('');
    expect(restored.code).toBe(0);
    const db = await openSchema(target);
    expect(await tableHashes(db.sql)).toEqual(source);
    // Sequences continue where they stood, so new rows take new ids.
    const sequences = await sequenceValues(db.sql);
    expect(Object.keys(sequences).length).toBeGreaterThan(2);
    expect(sequences).toEqual(await sequenceValues(stack.gateway.store.db.sql));

    // A second restore over it is refused, unless forced (which says what it dropped).
    const again = await keygate(['restore', '--from', file], external(target));
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/schema kg_t_\w+ is not empty .*--force/);
    const forced = await keygate(['restore', '--from', file, '--force'], external(target));
    expect(forced.code).toBe(0);
    expect(forced.stdout).toMatch(/dropped the \d+ tables there \(--force\)/);
    expect(await tableHashes(db.sql)).toEqual(source);

    const config = loadConfig({
      PORT: '0',
      KEYGATE_DATA_DIR: newDataDir('keygate-restored-'),
      KEYGATE_UPSTREAM_URL: stack.emulator.url,
      KEYGATE_SECRET: stack.config.secret!,
      KEYGATE_OPERATOR_TOKEN: stack.config.operatorToken!,
      KEYGATE_FLUSH_INTERVAL_MS: '10',
      DATABASE_URL: TEST_DATABASE_URL ?? stack.gateway.store.db.url,
    });
    const gateway: Gateway = await startGateway(config, {
      logger: createLogger('warn', () => {}),
      schema: target,
    });
    try {
      const [before, after] = [await report(stack.gateway.url), await report(gateway.url)];
      expect(after.status).toBe(200);
      expect(after.body).toEqual(before.body);
      // A member's live key (its provider key sealed with KEYGATE_SECRET) and a test key of before.
      expect((await callModel(gateway.url, fx.aliceKey.secret)).status).toBe(200);
      expect((await callModel(gateway.url, fx.testKey.secret)).status).toBe(200);
      // A key revoked before the backup stays revoked.
      expect((await callModel(gateway.url, fx.bobKey.secret)).status).toBe(401);
    } finally {
      await gateway.close();
      rmSync(config.dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('the embedded database: restored into a new data dir, backed up beside its running gateway, the same rows', async () => {
    const file = join(files, 'to-embedded.kgbak');
    const source = await sourceNow();
    expect((await keygate(['backup', '--out', file], external(stack.schema))).code).toBe(0);
    const dataDir = newDataDir('keygate-embedded-restore-');
    try {
      const restored = await keygate(['restore', '--from', file], { KEYGATE_DATA_DIR: dataDir });
      expect(restored.code).toBe(0);
      // A new data dir has no secret yet: the restore says which one the provider keys need.
      expect(restored.stderr).toMatch(/sealed with the KEYGATE_SECRET .* copy that file to .*secret/);

      const port = await freePort();
      const served = await spawnGateway({
        env: childEnv({
          KEYGATE_DATA_DIR: dataDir,
          KEYGATE_SECRET: stack.config.secret!,
          KEYGATE_UPSTREAM_URL: stack.emulator.url,
          KEYGATE_LOG_LEVEL: 'warn',
          KEYGATE_WORKERS: '1',
        }),
        port,
        ready: '/readyz',
      });
      try {
        const copy = join(files, 'from-embedded.kgbak');
        const taken = await keygate(['backup', '--out', copy], { KEYGATE_DATA_DIR: dataDir });
        expect(taken.stderr).toBe('');
        expect(taken.code).toBe(0);
        expect((await callModel(served.url, fx.aliceKey.secret)).status).toBe(200);

        const target = `kg_t_${randomBase62(10).toLowerCase()}`;
        expect((await keygate(['restore', '--from', copy], external(target))).code).toBe(0);
        expect(await tableHashes((await openSchema(target)).sql)).toEqual(source);
      } finally {
        await served.stop('SIGTERM');
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('refuses a backup of a newer version and a damaged file, and loads nothing from either', async () => {
    const file = join(files, 'good.kgbak');
    expect((await keygate(['backup', '--out', file], external(stack.schema))).code).toBe(0);
    const text = gunzipSync(readFileSync(file)).toString();
    const header = JSON.parse(text.slice(0, text.indexOf('\n')));
    header.migrations.push('999_from_the_future.sql');
    const newer = join(files, 'newer.kgbak');
    writeFileSync(newer, gzipSync(`${JSON.stringify(header)}${text.slice(text.indexOf('\n'))}`));
    const target = `kg_t_${randomBase62(10).toLowerCase()}`;
    const refused = await keygate(['restore', '--from', newer], external(target));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/made by a newer Keygate.*999_from_the_future\.sql/);

    const cut = join(files, 'cut.kgbak');
    const whole = readFileSync(file);
    writeFileSync(cut, whole.subarray(0, Math.floor(whole.length * 0.6)));
    const damaged = await keygate(['restore', '--from', cut], external(target));
    expect(damaged.code).toBe(1);
    expect(damaged.stderr).toMatch(/damaged or incomplete.*nothing was loaded/);
    expect(damaged.stderr).not.toMatch(/\n\s+at /);
    const db = await openSchema(target);
    const [accounts] = await db.sql<{ n: number }[]>`select count(*)::int as n from accounts`;
    expect(accounts!.n).toBe(0);
  }, 120_000);
});
