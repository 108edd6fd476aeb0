import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

async function pgBin(name: string): Promise<string> {
  const { stdout } = await run('sh', ['-c', 'ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1']);
  const dir = stdout.trim();
  if (!dir) throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql');
  return join(dir, name);
}

export interface PgCluster {
  url: string;
  start(): Promise<void>;
  /** `immediate` is a crash of the server; `fast` a clean stop that still cuts every connection. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  destroy(): Promise<void>;
}

/**
 * A PostgreSQL cluster of the test's own, on a free loopback port, that the test may stop and
 * start at will (never the shared one). Runs as the postgres user when the test runs as root.
 */
export async function createPgCluster(): Promise<PgCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-pg-'));
  const data = join(dir, 'data');
  const port = await freePort();
  const root = process.getuid?.() === 0;
  if (root) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const as = async (bin: string, args: string[]) => {
    const path = await pgBin(bin);
    return root ? run('runuser', ['-u', 'postgres', '--', path, ...args]) : run(path, args);
  };
  await as('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
  const cluster: PgCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async start() {
      await as('pg_ctl', ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', '-t', '60', 'start']);
    },
    async stop(mode = 'fast') {
      await as('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
    },
    async destroy() {
      await as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}
