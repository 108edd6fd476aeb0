import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import postgres from 'postgres';
import { randomBase62 } from '../src/lib/ids';
import { openDatabase, type Database } from '../src/store';
import { TEST_DATABASE_URL } from './harness';
import { freePort } from './kit/free-port';
import { newDataDir } from './data-dir';
import { childEnv, keygateCommand, type SpawnedGateway, spawnGateway } from './kit/gateway';

export interface GatewayChild extends SpawnedGateway {
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
export async function startGatewayProcess(extraEnv: Record<string, string> = {}): Promise<GatewayChild> {
  const dataDir = newDataDir('keygate-proc-');
  const schema = `kg_t_${randomBase62(10).toLowerCase()}`;
  const env = childEnv({
    KEYGATE_DATA_DIR: dataDir,
    KEYGATE_LOG_LEVEL: 'warn',
    ...(TEST_DATABASE_URL
      ? {
          DATABASE_URL: TEST_DATABASE_URL,
          KEYGATE_DB_SCHEMA: schema,
          KEYGATE_SECRET: randomBase62(43),
        }
      : {}),
    ...extraEnv,
  });
  const gw = await spawnGateway({ env, port: await freePort() });
  return {
    ...gw,
    cli: (args, more = {}) =>
      new Promise((resolve, reject) => {
        const command = keygateCommand([...args, '--json']);
        execFile(
          command.file,
          command.args,
          { env: { ...gw.env, ...more }, timeout: 60_000 },
          (err, stdout, err2) =>
            err ? reject(new Error(`${args.join(' ')}: ${err2}`)) : resolve(JSON.parse(stdout)),
        );
      }),
    database: () =>
      openDatabase({ url: TEST_DATABASE_URL, dataDir, ...(TEST_DATABASE_URL ? { schema } : {}) }),
    async remove() {
      await gw.stop('SIGKILL');
      if (TEST_DATABASE_URL) {
        const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
        await sql`drop schema if exists ${sql(schema)} cascade`;
        await sql.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
