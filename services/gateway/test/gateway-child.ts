import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { randomBase62 } from '../src/lib/ids';
import { openDatabase, type Database } from '../src/store';
import { TEST_DATABASE_URL } from './harness';
import { freePort } from './own-postgres';

const BIN = join(import.meta.dirname, '../bin/keygate.js');

export interface GatewayProcess {
  proc: ChildProcess;
  url: string;
  env: NodeJS.ProcessEnv;
  stderr(): string;
  exited: Promise<number | null>;
  /** Runs a CLI command against this gateway's database and parses its --json output. */
  cli(args: string[], env?: NodeJS.ProcessEnv): Promise<any>;
  /** Opens the gateway's database (once it has exited, on the embedded one). */
  database(): Promise<Database>;
  /** Kills what is left and removes the data dir and schema. */
  remove(): Promise<void>;
}

/**
 * `keygate serve` from the compiled build in a child process: on TEST_DATABASE_URL in a schema
 * of its own, else on the embedded PostgreSQL in a fresh data dir. Resolves once /health answers.
 */
export async function startGatewayProcess(extraEnv: Record<string, string> = {}): Promise<GatewayProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keygate-proc-'));
  const schema = `kg_t_${randomBase62(10).toLowerCase()}`;
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    KEYGATE_DATA_DIR: dataDir,
    PORT: String(port),
    KEYGATE_LOG_LEVEL: 'warn',
    ...extraEnv,
  };
  for (const name of [
    'DATABASE_URL',
    'KEYGATE_SECRET',
    'KEYGATE_OPERATOR_TOKEN',
    'KEYGATE_URL',
    'KEYGATE_DB_SCHEMA',
  ])
    delete env[name];
  if (TEST_DATABASE_URL)
    Object.assign(env, {
      DATABASE_URL: TEST_DATABASE_URL,
      KEYGATE_DB_SCHEMA: schema,
      KEYGATE_SECRET: randomBase62(43),
    });
  const proc = spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; proc.exitCode === null; i++) {
    if (
      await fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) }).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (i > 900) throw new Error(`not ready:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    proc,
    url,
    env,
    stderr: () => stderr,
    exited,
    cli: (args, more = {}) =>
      new Promise((resolve, reject) => {
        execFile(
          process.execPath,
          [BIN, ...args, '--json'],
          { env: { ...env, ...more }, timeout: 60_000 },
          (err, stdout, err2) =>
            err ? reject(new Error(`${args.join(' ')}: ${err2}`)) : resolve(JSON.parse(stdout)),
        );
      }),
    database: () =>
      openDatabase({ url: TEST_DATABASE_URL, dataDir, ...(TEST_DATABASE_URL ? { schema } : {}) }),
    async remove() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
      if (TEST_DATABASE_URL) {
        const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
        await sql`drop schema if exists ${sql(schema)} cascade`;
        await sql.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
