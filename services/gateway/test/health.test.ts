import { startEmulator, type Emulator } from '@keygate/emulator';
import { rmSync } from 'node:fs';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config';
import { randomBase62 } from '../src/lib/ids';
import { createLogger } from '../src/lib/logger';
import { startGateway, type Gateway } from '../src/server';
import { api, startStack, TEST_DATABASE_URL, type Stack } from './harness';
import { freePort } from './kit/free-port';
import { privatePostgres, type PrivatePostgres } from './kit/private-postgres';
import { waitFor } from './kit/wait';
import { newDataDir } from './data-dir';

describe('/healthz and /readyz on a running gateway', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.close());

  it('/healthz and its old name /health answer without asking anything', async () => {
    for (const path of ['/healthz', '/health']) {
      const res = await api(stack.gateway.url, path);
      expect(res).toMatchObject({ status: 200, body: { status: 'ok' } });
      expect(res.headers.get('request-id')).toMatch(/^req_/);
    }
  });

  it('/readyz without a token: the status only, nothing about the deployment', async () => {
    for (const bearer of [undefined, 'not-the-operator-token-0123']) {
      const res = await api(stack.gateway.url, '/readyz', bearer ? { bearer } : {});
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ready' });
    }
  });

  it('/readyz to the operator token: database, migrations and call log checked; the provider reported apart', async () => {
    const res = await api(stack.gateway.url, '/readyz', { bearer: stack.gateway.operatorToken });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'ready',
      checks: {
        database: { ok: true, latency_ms: expect.any(Number) },
        migrations: { ok: true, pending: [] },
        call_log: { ok: true },
      },
      upstream: { reachable: true, url: stack.emulator.url },
    });
  });

  it('a pool busy with calls leaves the instance ready: readiness asks on a connection of its own', async () => {
    const sql = stack.gateway.store.db.sql;
    // Every pooled connection waits on a lock the watcher holds until readiness has answered (a
    // sleep of a few seconds raced the pool's opening on a slow machine: the first sleeps ended
    // before the last connection started one).
    const LOCK = 74_250_029;
    const watcher = postgres(TEST_DATABASE_URL!, { max: 1, onnotice: () => {} });
    await watcher`select pg_advisory_lock(${LOCK})`;
    const busy = Array.from({ length: sql.options.max }, () =>
      sql`select pg_advisory_xact_lock(${LOCK}), 'keygate-busy-pool'`.execute(),
    );
    try {
      await waitFor(
        async () => {
          const [row] = await watcher<{ n: number }[]>`
            select count(*)::int as n from pg_stat_activity
            where state = 'active' and query like '%keygate-busy-pool%' and pid <> pg_backend_pid()`;
          return row!.n >= sql.options.max;
        },
        { timeout: 30_000, interval: 20, what: 'every pooled connection busy' },
      );
      // The readiness check answers within its 1 s timeout while every pooled connection waits.
      const res = await api(stack.gateway.url, '/readyz', { bearer: stack.gateway.operatorToken });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'ready', checks: { database: { ok: true } } });
    } finally {
      await watcher`select pg_advisory_unlock(${LOCK})`;
      await Promise.all(busy);
      await watcher.end();
    }
  });

  it('a migration file not recorded as applied makes the instance unready', async () => {
    const sql = stack.gateway.store.db.sql;
    const [row] = await sql`delete from keygate_migrations where version = 7 returning *`;
    try {
      expect((await api(stack.gateway.url, '/readyz')).body).toEqual({ status: 'not_ready' });
      const res = await api(stack.gateway.url, '/readyz', { bearer: stack.gateway.operatorToken });
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({
        status: 'not_ready',
        checks: {
          migrations: { ok: false, pending: ['007_provider_key_status.sql'] },
          database: { ok: true },
        },
      });
    } finally {
      await sql`insert into keygate_migrations ${sql(row!)}`;
    }
    expect((await api(stack.gateway.url, '/readyz')).status).toBe(200);
  });
});

describe('an unreachable provider does not fail readiness', () => {
  it('ready, with upstream.reachable false', async () => {
    const stack = await startStack({ KEYGATE_UPSTREAM_URL: `http://127.0.0.1:${await freePort()}` });
    try {
      const res = await api(stack.gateway.url, '/readyz', { bearer: stack.gateway.operatorToken });
      expect(res).toMatchObject({ status: 200, body: { status: 'ready', upstream: { reachable: false } } });
    } finally {
      await stack.close();
    }
  });
});

describe('the database goes away (a PostgreSQL cluster of this test)', () => {
  let pg: PrivatePostgres;
  let emulator: Emulator;
  let gateway: Gateway;
  let dataDir: string;
  beforeAll(async () => {
    pg = await privatePostgres();
    emulator = await startEmulator({ port: 0 });
    dataDir = newDataDir('keygate-health-');
    const config = loadConfig({
      PORT: '0',
      DATABASE_URL: pg.url,
      KEYGATE_SECRET: randomBase62(43),
      KEYGATE_DATA_DIR: dataDir,
      KEYGATE_UPSTREAM_URL: emulator.url,
      KEYGATE_INVALIDATION_POLL_MS: '60000',
      KEYGATE_METRICS_TOKEN: 'metrics-token-0123456789',
    });
    gateway = await startGateway(config, { logger: createLogger('silent') });
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
    await emulator?.close();
    await pg?.remove();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('/readyz stays 200 (degraded) while known keys are served from memory, 503 without that grace; /healthz stays 200; both recover with the database', async () => {
    // A second instance on the same database that serves nothing from memory.
    const strictDir = newDataDir('keygate-health-strict-');
    const strict = await startGateway(
      loadConfig({
        PORT: '0',
        DATABASE_URL: pg.url,
        KEYGATE_SECRET: randomBase62(43),
        KEYGATE_DATA_DIR: strictDir,
        KEYGATE_UPSTREAM_URL: emulator.url,
        KEYGATE_INVALIDATION_POLL_MS: '60000',
        KEYGATE_METRICS_TOKEN: 'metrics-token-0123456789',
        KEYGATE_KEY_STALE_MAX_MS: '0',
      }),
      { logger: createLogger('silent') },
    );
    try {
      for (const g of [gateway, strict]) expect((await api(g.url, '/readyz')).status).toBe(200);
      await pg.stop();
      const started = performance.now();
      const degraded = await api(gateway.url, '/readyz', { bearer: 'metrics-token-0123456789' });
      expect(performance.now() - started).toBeLessThan(3_000);
      expect(degraded.status).toBe(200);
      expect(degraded.body).toMatchObject({
        status: 'degraded',
        checks: {
          database: { ok: false, error: expect.any(String), serving_from_memory_until: expect.any(String) },
          migrations: { ok: true },
          call_log: { ok: true },
        },
      });
      // The grace is KEYGATE_KEY_STALE_MAX_MS (15 minutes) after the database last answered.
      const until = Date.parse(degraded.body.checks.database.serving_from_memory_until);
      expect(until - Date.now()).toBeGreaterThan(14 * 60_000);
      expect(until - Date.now()).toBeLessThanOrEqual(15 * 60_000);
      expect((await api(gateway.url, '/readyz')).body).toEqual({ status: 'degraded' });

      const down = await api(strict.url, '/readyz', { bearer: 'metrics-token-0123456789' });
      expect(down.status).toBe(503);
      expect(down.body).toMatchObject({
        status: 'not_ready',
        checks: { database: { ok: false, error: expect.any(String) } },
      });
      for (const g of [gateway, strict]) expect((await api(g.url, '/healthz')).status).toBe(200);

      await pg.start();
      for (const g of [gateway, strict])
        await waitFor(async () => (await api(g.url, '/readyz')).body.status === 'ready' || null, {
          timeout: 15_000,
          interval: 200,
          what: '/readyz to answer ready again',
        });
    } finally {
      await strict.close();
      rmSync(strictDir, { recursive: true, force: true });
    }
  }, 60_000);
});
