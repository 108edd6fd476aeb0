import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { randomBase62 } from '../src/lib/ids';
import { TEST_DATABASE_URL } from './harness';

const BIN = join(import.meta.dirname, '../bin/keygate.js');
const dataDir = mkdtempSync(join(tmpdir(), 'keygate-start-'));
const schema = `kg_t_${randomBase62(10).toLowerCase()}`;

afterAll(async () => {
  rmSync(dataDir, { recursive: true, force: true });
  if (TEST_DATABASE_URL) {
    const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
    await sql`drop schema if exists ${sql(schema)} cascade`;
    await sql.end();
  }
});

describe('`keygate serve` as a person starts it', () => {
  it('prints the dashboard URL and the next step on stdout; GET / leads to the dashboard', async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: '0',
      KEYGATE_DATA_DIR: dataDir,
      KEYGATE_LOG_LEVEL: 'warn',
    };
    for (const name of [
      'DATABASE_URL',
      'KEYGATE_SECRET',
      'KEYGATE_OPERATOR_TOKEN',
      'KEYGATE_URL',
      'KEYGATE_DB_SCHEMA',
    ])
      delete env[name];
    if (TEST_DATABASE_URL)
      Object.assign(env, {
        DATABASE_URL: TEST_DATABASE_URL,
        KEYGATE_DB_SCHEMA: schema,
        KEYGATE_SECRET: randomBase62(32),
      });
    const proc = spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    let stdout = '';
    let stderr = '';
    proc.stderr!.on('data', (d) => (stderr += d));
    // The message's last line is the signal that it has started.
    const printed = await new Promise<string>((resolve, reject) => {
      proc.stdout!.on('data', (d) => {
        stdout += d;
        if (stdout.includes('Stop with Ctrl-C')) resolve(stdout);
      });
      exited.then((code) => reject(new Error(`exited ${code} before the message: ${stderr}`)));
    });
    try {
      const url = /^Keygate is running at (http:\/\/127\.0\.0\.1:\d+)$/m.exec(printed)?.[1];
      expect(url, printed).toBeDefined();
      expect(printed).toContain(`Dashboard  ${url}/dashboard  (sign in with an admin key, or with `);
      expect(printed).toContain(`  API docs   ${url}/docs`);
      expect(printed).toContain('pnpm keygate account create');
      // Nothing but the message on stdout; the JSON logs stay on stderr.
      expect(printed.split('\n').filter((l) => l.startsWith('{'))).toEqual([]);

      const root = await fetch(`${url}/`, { redirect: 'manual' });
      expect(root.status).toBe(302);
      expect(root.headers.get('location')).toBe('/dashboard');
      const head = await fetch(`${url}/`, { method: 'HEAD', redirect: 'manual' });
      expect(head.status).toBe(302);
      // Followed as a browser does: the dashboard's sign-in page.
      const followed = await fetch(`${url}/`);
      expect(followed.status).toBe(200);
      expect(new URL(followed.url).pathname).toBe('/dashboard/sign-in');
      expect(await followed.text()).toContain('Key or operator token');
    } finally {
      proc.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 180_000);
});
