import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './kit/free-port';
import { childEnv, keygateCommand, type SpawnedGateway, spawnGateway } from './kit/gateway';
import { newDataDir } from './data-dir';

const run = promisify(execFile);

/**
 * What the README promises: with no database configured, `keygate serve` (what `pnpm start`
 * runs) brings up the embedded PostgreSQL, and the CLI works beside the running gateway.
 */
describe('a fresh start with no database configured', () => {
  let dataDir: string;
  let port: number;
  let server: SpawnedGateway;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dataDir = newDataDir('keygate-embedded-');
    port = await freePort();
    server = await spawnGateway({
      env: childEnv({ KEYGATE_DATA_DIR: dataDir, KEYGATE_LOG_LEVEL: 'warn' }),
      port,
    });
    env = server.env;
  }, 90_000);

  afterAll(async () => {
    await server?.stop('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves /v1/messages for a key the CLI created beside it', async () => {
    const keygate = async (...args: string[]) => {
      const command = keygateCommand([...args, '--json']);
      return JSON.parse((await run(command.file, command.args, { env })).stdout);
    };
    const account = await keygate('account', 'create', '--name', 'Fresh', '--plan', 'solo');
    expect(account.id).toMatch(/^acct_/);
    const key = await keygate('key', 'create', '--account', account.id, '--test');
    expect(key.key).toMatch(/^kg_test_/);
    const res = await fetch(`http://127.0.0.1:${port}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-opus-4-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hello' }],
      }),
    });
    expect(res.status).toBe(200);
    const msg = (await res.json()) as { type: string; usage: { input_tokens: number } };
    expect(msg.type).toBe('message');
    expect(msg.usage.input_tokens).toBeGreaterThan(0);
  }, 60_000);

  it('shuts down cleanly on SIGTERM, releasing the embedded database', async () => {
    expect(await server.stop('SIGTERM')).toBe(0);
  }, 30_000);
});
