import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { StartupError } from '../lib/data-dir';

/**
 * PostgreSQL refuses to run as root, so as root the embedded cluster runs as the `postgres`
 * system user. That user must reach the binaries and the cluster; the user's own folders are
 * never opened up for it (a checkout or data dir under a private home folder, mode 700).
 */
export interface PostgresUser {
  uid: number;
  gid: number;
}

/** The user PostgreSQL runs as: null (ourselves) unless we are root; the `postgres` system user is created if missing. */
export function runAs(): PostgresUser | null {
  if (process.platform === 'win32' || userInfo().uid !== 0) return null;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('groupadd', ['--system', 'postgres']);
    execFileSync('useradd', ['--system', '--gid', 'postgres', '--no-create-home', 'postgres']);
    return { uid: id('-u'), gid: id('-g') };
  }
}

/** Whether `user` may enter (search) `dir`, asked of the system as that user, so groups and ACLs count. */
export function canEnter(dir: string, user: PostgresUser): boolean {
  return spawnSync('test', ['-x', dir], { ...user, stdio: 'ignore' }).status === 0;
}

/** The outermost folder on the way to `dir` that `user` cannot enter (null: it reaches `dir`). */
export function blockingFolder(dir: string, user: PostgresUser): string | null {
  if (canEnter(dir, user)) return null;
  const chain: string[] = [];
  for (let d = resolve(dir); ; d = dirname(d)) {
    chain.unshift(d);
    if (dirname(d) === d) break;
  }
  return chain.find((d) => existsSync(d) && !canEnter(d, user)) ?? null;
}

/** A data dir the postgres user cannot reach: one line that names the folder in the way and the fixes. */
export class UnreachableDataDirError extends StartupError {
  constructor(dataDir: string, blocking: string) {
    const mode = existsSync(blocking) ? ` (mode ${(statSync(blocking).mode & 0o777).toString(8)})` : '';
    super(
      `the embedded PostgreSQL runs as the system user postgres (PostgreSQL refuses root), which cannot enter ${blocking}${mode} on the way to the data dir ${dataDir}; ` +
        'set KEYGATE_DATA_DIR to a folder it can reach (for example /var/lib/keygate), or DATABASE_URL to your own PostgreSQL',
    );
  }
}

/**
 * The folder of PostgreSQL's binaries (bin/, lib/, share/, which find each other relatively)
 * as the postgres user can run it: where it is, or, when a private folder is in the way (a
 * checkout under /root), a copy in a cache only root can write, made once per version.
 */
export function reachableInstall(native: string, user: PostgresUser, cacheRoot = defaultCacheRoot()): string {
  if (canEnter(join(native, 'bin'), user)) return native;
  const { name, version } = JSON.parse(readFileSync(join(native, '../package.json'), 'utf8'));
  const target = join(cacheRoot, `${String(name).replace('/', '+')}@${version}`);
  if (!isTrusted(target)) {
    const partial = mkdtempSync(`${target}.tmp-`);
    try {
      cpSync(native, partial, { recursive: true, verbatimSymlinks: true });
      // mkdtemp made it 0700: the copy is ours, and postgres must enter it.
      chmodSync(partial, 0o755);
      rmSync(target, { recursive: true, force: true });
      renameSync(partial, target);
    } finally {
      rmSync(partial, { recursive: true, force: true });
    }
  }
  if (!canEnter(join(target, 'bin'), user))
    throw new StartupError(
      `the postgres user cannot run PostgreSQL from ${native} nor from the copy in ${target}; set DATABASE_URL to your own PostgreSQL`,
    );
  return target;
}

/** /var/cache/keygate where it can be made, else a folder under the temp dir; either must be root's alone. */
function defaultCacheRoot(): string {
  for (const root of ['/var/cache/keygate', join(tmpdir(), 'keygate-root-cache')]) {
    try {
      mkdirSync(root, { recursive: true, mode: 0o755 });
    } catch {
      continue;
    }
    if (isTrusted(root)) return root;
  }
  throw new StartupError(
    'found no folder only root can write to copy PostgreSQL into (/var/cache/keygate); set DATABASE_URL to your own PostgreSQL',
  );
}

/** Ours alone: owned by root and writable by no one else (a copy there is safe to run). */
function isTrusted(path: string): boolean {
  if (!existsSync(path)) return false;
  const st = statSync(path);
  return st.isDirectory() && st.uid === 0 && (st.mode & 0o022) === 0;
}
