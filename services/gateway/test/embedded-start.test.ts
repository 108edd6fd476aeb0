import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newDataDir } from './data-dir';

const BIN = join(import.meta.dirname, '../bin/keygate.js');
const run = promisify(execFile);

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

/**
 * What the README promises: with no database configured, `keygate serve` (what `pnpm start`
 * runs) brings up the embedded PostgreSQL, and the CLI works beside the running gateway.
 */
describe('a fresh start with no database configured', () => {
  let dataDir: string;
  let port: number;
  let server: ChildProcess;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    dataDir = newDataDir('keygate-embedded-');
    port = await freePort();
    env = { ...process.env, KEYGATE_DATA_DIR: dataDir, PORT: String(port), KEYGATE_LOG_LEVEL: 'warn' };
    delete env.DATABASE_URL;
    delete env.KEYGATE_SECRET;
    delete env.KEYGATE_OPERATOR_TOKEN;
    server = spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    server.stderr!.on('data', (d) => (stderr += d));
    for (let i = 0; ; i++) {
      const up = await fetch(`http://127.0.0.1:${port}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (i > 600 || server.exitCode !== null) throw new Error(`gateway did not start:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 90_000);

  afterAll(async () => {
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((r) => server.once('exit', r));
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves /v1/messages for a key the CLI created beside it', async () => {
    const keygate = async (...args: string[]) =>
      JSON.parse((await run(process.execPath, [BIN, ...args, '--json'], { env })).stdout);
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
    server.kill('SIGTERM');
    const code = await new Promise((r) => server.once('exit', r));
    expect(code).toBe(0);
  }, 30_000);
});
