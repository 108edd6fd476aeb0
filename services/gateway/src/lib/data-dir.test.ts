import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirInUseError, lockDataDir, resolveDataDir } from './data-dir';

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
