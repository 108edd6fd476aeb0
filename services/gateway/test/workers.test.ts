import { startEmulator, type Emulator } from '@keygate/emulator';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBase62 } from '../src/lib/ids';
import { provision } from './gateway-process';
import { freePort } from './kit/free-port';
import { childEnv, type SpawnedGateway, spawnGateway } from './kit/gateway';
import { PROVIDER_KEY, TEST_DATABASE_URL } from './harness';

const DATABASE_URL = TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `kg_t_${randomBase62(10).toLowerCase()}`;
const dataDir = mkdtempSync(join(tmpdir(), 'keygate-workers-'));
let emulator: Emulator;
let env: Record<string, string>;

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, apiKey: PROVIDER_KEY });
  env = {
    DATABASE_URL,
    KEYGATE_DB_SCHEMA: schema,
    KEYGATE_SECRET: `workers-secret-${randomBase62(24)}`,
    KEYGATE_UPSTREAM_URL: emulator.url,
    KEYGATE_DATA_DIR: dataDir,
    KEYGATE_WORKERS: '2',
    PROVIDER_KEY,
  };
});
afterAll(async () => {
  await emulator?.close();
  const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {} });
  await sql`drop schema if exists ${sql(schema)} cascade`;
  await sql.end();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('keygate serve --workers', () => {
  it('two workers share the port and both answer calls; each spools on its own; SIGTERM drains both, every call logged once', async () => {
    const appKey = await provision(env);
    let gw: SpawnedGateway | null = await spawnGateway({
      env: childEnv({ KEYGATE_LOG_LEVEL: 'info', ...env, REDIS_URL: undefined }),
      port: await freePort(),
    });
    try {
      // Both workers listening: the primary says so, and prints the start message once.
      await expect
        .poll(() => gw!.stderr().includes('keygate workers listening'), { timeout: 60_000 })
        .toBe(true);
      await expect.poll(() => gw!.stdout(), { timeout: 10_000 }).toContain(`Keygate is running at ${gw.url}`);
      expect(gw.stdout().split(`Keygate is running at ${gw.url}`).length - 1).toBe(1);
      // Without Redis the workers count rate limits apart: said at start.
      expect(gw.stderr()).toContain('without REDIS_URL each worker counts rate limits alone');
      const ids: string[] = [];
      for (let i = 0; i < 24; i++) {
        // A new connection each time: the primary hands connections to the workers in turn.
        const res = await fetch(`${gw.url}/v1/messages`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${appKey}`,
            'content-type': 'application/json',
            connection: 'close',
          },
          body: JSON.stringify({
            model: 'claude-opus-4-5',
            max_tokens: 8,
            messages: [{ role: 'user', content: 'hi' }],
          }),
        });
        expect(res.status).toBe(200);
        ids.push(res.headers.get('keygate-request-id')!);
        await res.text();
      }
      await expect
        .poll(
          () =>
            gw!
              .stderr()
              .split('\n')
              .filter((l) => l.includes('"msg":"access"')).length,
        )
        .toBeGreaterThanOrEqual(24);
      const access = gw
        .stderr()
        .split('\n')
        .filter((l) => l.includes('"msg":"access"') && l.includes('/v1/messages'))
        .map((l) => JSON.parse(l) as { pid: number; requestId: string });
      expect(new Set(access.map((a) => a.pid)).size).toBe(2);
      expect(readdirSync(join(dataDir, 'spool')).sort()).toEqual(['worker-1', 'worker-2']);

      gw.proc.kill('SIGTERM');
      expect(await gw.exited).toBe(0);
      gw = null;
      const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {}, connection: { search_path: schema } });
      try {
        const rows = await sql<{ id: string }[]>`select id from calls`;
        expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
      } finally {
        await sql.end();
      }
    } finally {
      if (gw) {
        gw.proc.kill('SIGKILL');
        await gw.exited;
      }
    }
  }, 120_000);

  it('without REDIS_URL and without --workers, one process serves (rate limits stay exact per key)', async () => {
    const gw = await spawnGateway({
      env: childEnv({ KEYGATE_LOG_LEVEL: 'info', ...env, KEYGATE_WORKERS: undefined, REDIS_URL: undefined }),
      port: await freePort(),
    });
    try {
      await expect.poll(() => gw.stdout(), { timeout: 10_000 }).toContain(`Keygate is running at ${gw.url}`);
      // The logger writes on its own schedule: wait for the line.
      await expect.poll(() => gw.stderr(), { timeout: 10_000 }).toContain('"msg":"keygate listening"');
      const listening = gw
        .stderr()
        .split('\n')
        .filter((l) => l.includes('"msg":"keygate listening"'))
        .map((l) => JSON.parse(l) as { worker?: number; limits: string });
      expect(listening).toEqual([expect.objectContaining({ limits: 'memory' })]);
      expect(listening[0]!.worker).toBeUndefined();
      expect(gw.stderr()).not.toContain('keygate workers listening');
    } finally {
      gw.proc.kill('SIGTERM');
      expect(await gw.exited).toBe(0);
    }
  }, 120_000);
});
