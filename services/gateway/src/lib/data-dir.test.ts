import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirInUseError, lockDataDir, resolveDataDir, runningGateway } from './data-dir';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const outside = mkdtempSync(join(tmpdir(), 'keygate-dd-'));
afterAll(() => rmSync(outside, { recursive: true, force: true }));

describe('resolveDataDir', () => {
  it('puts the default at the workspace root from anywhere inside the repository', () => {
    for (const cwd of [ROOT, join(ROOT, 'services/gateway'), join(ROOT, 'services/gateway/src/lib')]) {
      expect(resolveDataDir(undefined, cwd)).toBe(join(ROOT, '.keygate'));
    }
  });

  it('puts the default in the current directory outside the repository', () => {
    expect(resolveDataDir(undefined, outside)).toBe(join(outside, '.keygate'));
  });

  it('takes an explicit folder relative to the current directory', () => {
    expect(resolveDataDir('data', join(ROOT, 'services/gateway'))).toBe(join(ROOT, 'services/gateway/data'));
    expect(resolveDataDir('/srv/keygate', ROOT)).toBe('/srv/keygate');
  });
});

describe('lockDataDir', () => {
  it("admits one holder at a time, naming it, and takes over a dead holder's lock", () => {
    const dir = join(outside, 'locked');
    lockDataDir(dir, 'a keygate gateway')();
    // Held by another live process (our parent stands in for it).
    writeFileSync(
      join(dir, 'keygate.lock'),
      JSON.stringify({ pid: process.ppid, what: 'a keygate gateway' }),
    );
    expect(() => lockDataDir(dir, 'the keygate CLI')).toThrow(DataDirInUseError);
    expect(() => lockDataDir(dir, 'the keygate CLI')).toThrow(
      `a keygate gateway (pid ${process.ppid}) is using the data dir ${dir}`,
    );
    writeFileSync(
      join(dir, 'keygate.lock'),
      JSON.stringify({ pid: 2 ** 22 + 12345, what: 'a killed gateway' }),
    );
    const again = lockDataDir(dir, 'the keygate CLI');
    again();
  });
});

describe('runningGateway', () => {
  // A gateway killed with -9 stays a zombie until its parent reaps it; signal 0 still finds it.
  it.runIf(existsSync('/proc/self/stat'))('takes a killed gateway not yet reaped for gone', async () => {
    const dir = join(outside, 'zombie');
    // sh starts a child, then becomes `sleep`, which never reaps it: killed, it stays a zombie.
    const parent = spawn('sh', ['-c', 'sleep 60 & echo $!; exec sleep 60'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      const pid = Number(await new Promise<string>((r) => parent.stdout.once('data', (d) => r(String(d)))));
      lockDataDir(dir, 'a keygate gateway')();
      writeFileSync(join(dir, 'gateway.json'), JSON.stringify({ pid, url: 'http://127.0.0.1:1' }));
      expect(runningGateway(dir)).toEqual({ pid, url: 'http://127.0.0.1:1' });
      process.kill(pid, 'SIGKILL');
      const state = () => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0];
      await expect.poll(state, { timeout: 5_000 }).toBe('Z');
      expect(runningGateway(dir)).toBeNull();
    } finally {
      parent.kill('SIGKILL');
    }
  });
});
