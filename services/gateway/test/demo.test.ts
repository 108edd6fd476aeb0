import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { newDataDir } from './data-dir';
import { freePort } from './kit/free-port';

// `pnpm demo` and `pnpm start` as the README gives them, from the repository's root.
const ROOT = join(import.meta.dirname, '../../..');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function pnpm(script: string, env: Record<string, string>) {
  const {
    DATABASE_URL: _d,
    KEYGATE_URL: _u,
    KEYGATE_DB_SCHEMA: _s,
    KEYGATE_SPOOL_DIR: _p,
    ...inherited
  } = process.env;
  const child = spawn('pnpm', [script], {
    cwd: ROOT,
    env: { ...inherited, KEYGATE_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, signalled as a terminal would (pnpm and node alike).
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

/** The demo's closing table: a header and one row per group and model. */
function expectUsageTable(stdout: string) {
  const table = stdout.slice(stdout.indexOf('Recorded usage (from the call log):'));
  expect(table.split('\n')[1]).toMatch(/^GROUP\s+MODEL\s+CALLS\s+INPUT\s+OUTPUT\s+CACHE_READ$/);
  expect(table).toMatch(/\n-\s+claude-opus-4-5\s+3\s+\d+\s+\d+\s+0\n/);
  expect(table).toMatch(/\ndemo-tool-loop\s+claude-opus-4-5\s+2\s+\d+\s+\d+\s+0\n/);
}

describe('pnpm demo', () => {
  it('runs to the end on a fresh data dir: exit 0 and the usage table', async () => {
    const dataDir = newDataDir('keygate-demo-');
    dirs.push(dataDir);
    const demo = pnpm('demo', { KEYGATE_DATA_DIR: dataDir });
    expect(await demo.exited, demo.stderr()).toBe(0);
    expectUsageTable(demo.stdout());
    expect(demo.stdout()).toContain(`embedded database in ${join(dataDir, 'demo')}`);
  }, 120_000);

  it('runs beside `pnpm start` on the same data dir, with its own database and spool', async () => {
    const dataDir = newDataDir('keygate-demo-start-');
    dirs.push(dataDir);
    const port = await freePort();
    const start = pnpm('start', { KEYGATE_DATA_DIR: dataDir, PORT: String(port) });
    try {
      await expect
        .poll(() => start.stderr(), { timeout: 60_000, interval: 50 })
        .toContain('"keygate listening"');
      const demo = pnpm('demo', { KEYGATE_DATA_DIR: dataDir, PORT: String(port) });
      expect(await demo.exited, demo.stderr()).toBe(0);
      expectUsageTable(demo.stdout());
      expect(existsSync(join(dataDir, 'demo/spool'))).toBe(true);
      // The gateway it ran beside still serves, and stops as usual.
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    } finally {
      process.kill(-start.child.pid!, 'SIGTERM');
    }
    expect(await start.exited, start.stderr()).toBe(0);
  }, 180_000);
});
