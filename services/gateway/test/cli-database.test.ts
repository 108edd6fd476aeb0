import { execFile } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { newDataDir } from './data-dir';

// The CLI as a user runs it outside the gateway's setup: no DATABASE_URL, no KEYGATE_URL.
const BIN = join(import.meta.dirname, '../bin/keygate.js');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function keygate(args: string[], opts: { cwd: string; env?: Record<string, string> }) {
  const {
    DATABASE_URL: _d,
    KEYGATE_URL: _u,
    KEYGATE_DB_SCHEMA: _s,
    KEYGATE_DATA_DIR: _k,
    ...inherited
  } = process.env;
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: opts.cwd, env: { ...inherited, ...opts.env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? (err.code as number) : 0, stdout, stderr }),
    ),
  );
}

describe('the CLI on a data dir with no database yet', () => {
  it('says on stderr, also with --json, that it creates one and where; not once it exists', async () => {
    // Run outside the workspace without KEYGATE_DATA_DIR: the default .keygate in the current folder.
    const cwd = newDataDir('keygate-cli-cwd-');
    dirs.push(cwd);
    const dataDir = join(cwd, '.keygate');
    const first = await keygate(['plans', '--json'], { cwd });
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toBeInstanceOf(Array);
    expect(first.stderr).toBe(
      `keygate: no database in ${dataDir} yet; creating a new embedded one there. A gateway started with another KEYGATE_DATA_DIR (or DATABASE_URL) will not see it: run the CLI with the gateway's KEYGATE_DATA_DIR, or KEYGATE_URL.\n`,
    );
    expect(existsSync(join(dataDir, 'postgres/PG_VERSION'))).toBe(true);

    const again = await keygate(['plans', '--json'], { cwd, env: { KEYGATE_DATA_DIR: dataDir } });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toBe('');
  }, 90_000);
});
