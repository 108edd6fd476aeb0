import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../src/lib/free-port';

const run = promisify(execFile);

export interface PrivatePostgres {
  url: string;
  /** The same database through the cluster's Unix socket: reachable when started with `tcp: false`. */
  socketUrl: string;
  /** `tcp: false` listens on the Unix socket only: clients on `url` are cut off (a network partition), `socketUrl` still works. */
  start(opts?: { tcp?: boolean }): Promise<void>;
  /** `immediate` is a crash of the server (or a lost host); `fast` a clean stop that still cuts every connection. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Stops the server if it runs and removes its files. */
  remove(): Promise<void>;
}

async function binDir(): Promise<string> {
  const found = await run('pg_config', ['--bindir']).then(
    (r) => r.stdout.trim(),
    () => '',
  );
  if (found) return found;
  const { stdout } = await run('sh', ['-c', 'ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1']);
  if (!stdout.trim())
    throw new Error('PostgreSQL binaries not found (pg_config or /usr/lib/postgresql/<version>/bin)');
  return stdout.trim();
}

/**
 * A PostgreSQL cluster of the test's own, in a temp dir on a free loopback port, that the test
 * may stop and start at will without touching the shared one. PostgreSQL refuses to run as
 * root: as root, the cluster belongs to the postgres user. Started when returned.
 */
export async function privatePostgres(): Promise<PrivatePostgres> {
  const bin = await binDir();
  const dir = mkdtempSync(join(tmpdir(), 'keygate-pg-'));
  const data = join(dir, 'data');
  const port = await freePort();
  const root = process.getuid?.() === 0;
  if (root) {
    const { stdout: uid } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(uid.trim()), Number(gid.trim()));
  }
  const as = (tool: string, args: string[]) =>
    root ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]) : run(join(bin, tool), args);
  await as('initdb', [
    '-D',
    data,
    '-U',
    'postgres',
    '--auth=trust',
    '-E',
    'UTF8',
    '--no-sync',
    '--no-instructions',
  ]);
  const opts = (tcp: boolean) =>
    `-p ${port} -k ${dir} -c listen_addresses=${tcp ? '127.0.0.1' : "''"} -c fsync=off -c max_connections=100`;
  const cluster: PrivatePostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    socketUrl: `postgres://postgres@localhost/postgres?host=${dir}&port=${port}`,
    async start({ tcp = true } = {}) {
      await as('pg_ctl', ['-D', data, '-o', opts(tcp), '-l', join(dir, 'log'), '-w', '-t', '60', 'start']);
    },
    async stop(mode = 'immediate') {
      await as('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
    },
    async remove() {
      await as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}
