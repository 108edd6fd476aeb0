import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';

export const DEFAULT_DATA_DIR = '.keygate';

/**
 * Where the data dir is: an explicit KEYGATE_DATA_DIR as given (relative to the current
 * directory); the default `.keygate` at the root of the Keygate workspace when run anywhere
 * inside it (so `pnpm start`, which runs in services/gateway, and a CLI run from the root
 * share one), else in the current directory.
 */
export function resolveDataDir(explicit: string | undefined, cwd = process.cwd()): string {
  if (explicit) return isAbsolute(explicit) ? explicit : resolve(cwd, explicit);
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'pnpm-workspace.yaml')) && isKeygateRoot(dir))
      return join(dir, DEFAULT_DATA_DIR);
    if (dirname(dir) === dir) return resolve(cwd, DEFAULT_DATA_DIR);
  }
}

function isKeygateRoot(dir: string): boolean {
  try {
    return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name === 'keygate';
  } catch {
    return false;
  }
}

/** A secret kept in the data dir (embedded mode), created on first use with owner-only permissions. */
export function persistentSecret(dataDir: string, name: string): string {
  const file = join(dataDir, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const value = randomBytes(32).toString('base64url');
  writeFileSync(file, `${value}\n`, { mode: 0o600, flag: 'wx' });
  return value;
}

/** A reason the gateway or the CLI cannot start that the user fixes: told in one line, no stack. */
export class StartupError extends Error {}

export class DataDirInUseError extends StartupError {}

export interface RunningGateway {
  pid: number;
  url: string;
}

const RUNTIME_FILE = 'gateway.json';
const LOCK_FILE = 'keygate.lock';

/**
 * Whether a process is running. A killed process stays a zombie until its parent reaps it, and
 * signal 0 still finds it: on Linux its state in /proc says so (`kill -9` then `pnpm start` at
 * once was refused as "already serving" for a dead gateway).
 */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

function isZombie(pid: number): boolean {
  try {
    // `pid (comm) S …`: the state follows the last ')' (comm may hold one).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false; // no /proc (macOS): signal 0 is all there is
  }
}

/**
 * One process at a time opens a data dir's database: the gateway, or a CLI while no gateway
 * runs. A lock whose process is gone (killed) is taken over. Returns the release.
 */
export function lockDataDir(dataDir: string, what: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, LOCK_FILE);
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, `${JSON.stringify({ pid: process.pid, what })}\n`, { flag: 'wx', mode: 0o600 });
      return () => rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 2) throw err;
    }
    let holder: { pid: number; what: string } | null = null;
    try {
      holder = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      // Half-written or gone: a stale lock either way.
    }
    if (holder && holder.pid !== process.pid && alive(holder.pid)) {
      throw new DataDirInUseError(`${holder.what} (pid ${holder.pid}) is using the data dir ${dataDir}`);
    }
    rmSync(file, { force: true });
  }
}

/** Tells the CLI a gateway owns the embedded database, so it goes through its operator API. */
export function announceGateway(dataDir: string, info: RunningGateway): () => void {
  const file = join(dataDir, RUNTIME_FILE);
  writeFileSync(file, `${JSON.stringify(info)}\n`, { mode: 0o600 });
  return () => rmSync(file, { force: true });
}

/** A second gateway on a data dir refuses to start, naming the one that serves it. */
export function assertNotServed(dataDir: string): void {
  const running = runningGateway(dataDir);
  if (running)
    throw new DataDirInUseError(
      `a gateway (pid ${running.pid}) is already serving the data dir ${dataDir} at ${running.url}; stop it first, or set KEYGATE_DATA_DIR to another folder`,
    );
}

export function runningGateway(dataDir: string): RunningGateway | null {
  const file = join(dataDir, RUNTIME_FILE);
  if (!existsSync(file)) return null;
  try {
    const info = JSON.parse(readFileSync(file, 'utf8')) as RunningGateway;
    return alive(info.pid) ? info : null;
  } catch {
    return null;
  }
}

/** Where the embedded PostgreSQL keeps its cluster inside a data dir. */
export function embeddedClusterDir(dataDir: string): string {
  return join(dataDir, 'postgres');
}

/** The folder the previous embedded engine (PGlite, before PostgreSQL proper) kept its database in. */
export function legacyPgliteDir(dataDir: string): string | null {
  const dir = join(dataDir, 'pgdata');
  return existsSync(join(dir, 'PG_VERSION')) ? dir : null;
}
