import {
  createAccount,
  createKey,
  createLogger,
  loadConfig,
  SecretBox,
  startGateway,
  type Gateway,
} from '@keygate/gateway';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Where an example sends its calls. */
export interface Connection {
  baseURL: string;
  appKey: string;
  /** The gateway, when this process runs it (offline); its call log can then be read directly. */
  gateway?: Gateway;
  /** A gateway started for this run alone: its address and key are gone when the example ends. */
  throwaway?: boolean;
}

export interface OpenConnection extends Connection {
  close(): Promise<void>;
}

export type Print = (line: string) => void;
export type Example<T> = (connection: Connection, print: Print) => Promise<T>;

/**
 * A gateway to run the examples against: the one in KEYGATE_BASE_URL / KEYGATE_APP_KEY when both
 * are set, else a local gateway started here, answering a `kg_test_` key with its built-in
 * emulator, so nothing leaves the machine. It keeps its data in DATABASE_URL (in a schema of its
 * own, dropped afterwards) or in an embedded database in a temporary folder.
 */
export async function connect(
  env: Record<string, string | undefined> = process.env,
  print: Print = () => {},
): Promise<OpenConnection> {
  if (env.KEYGATE_BASE_URL && env.KEYGATE_APP_KEY) {
    return { baseURL: env.KEYGATE_BASE_URL, appKey: env.KEYGATE_APP_KEY, close: async () => {} };
  }
  return startOffline({ databaseUrl: env.DATABASE_URL, print });
}

export async function startOffline(
  opts: { databaseUrl?: string | undefined; print?: Print } = {},
): Promise<OpenConnection> {
  const dataDir = mkdtempSync(join(tmpdir(), 'keygate-example-'));
  // As root the embedded PostgreSQL runs as the postgres user, which must enter this folder (mkdtemp makes it 0700).
  chmodSync(dataDir, 0o711);
  const schema = opts.databaseUrl ? `kg_example_${randomBytes(5).toString('hex')}` : undefined;
  const config = loadConfig({
    PORT: '0',
    KEYGATE_DATA_DIR: dataDir,
    KEYGATE_SECRET: randomBytes(24).toString('hex'),
    KEYGATE_FLUSH_INTERVAL_MS: '50',
    KEYGATE_LOG_LEVEL: 'warn',
    ...(opts.databaseUrl ? { DATABASE_URL: opts.databaseUrl } : {}),
  });
  const gateway = await startGateway(config, { logger: createLogger('warn'), ...(schema ? { schema } : {}) });
  const close = async () => {
    await gateway.writer.flush();
    if (schema) await gateway.store.db.sql`drop schema if exists ${gateway.store.db.sql(schema)} cascade`;
    await gateway.close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const deps = { store: gateway.store, box: new SecretBox(config.secret!), clock: Date.now };
    const { account } = await createAccount(deps, { name: 'Keygate examples', plan: 'team' });
    const { secret } = await createKey(deps, {
      accountId: account.id,
      kind: 'test',
      name: 'examples',
      app: 'examples',
      environment: 'offline',
    });
    opts.print?.(
      `(offline: a Keygate gateway at ${gateway.url}, ${opts.databaseUrl ? 'on DATABASE_URL' : 'on an embedded database'}; a kg_test_ key, answered by its built-in emulator)\n`,
    );
    return { baseURL: gateway.url, appKey: secret, gateway, throwaway: true, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Runs an example from the command line: connect, run, print, close. */
export async function runExample<T>(main: Example<T>): Promise<void> {
  const print: Print = (line) => console.log(line);
  const connection = await connect(process.env, print);
  try {
    await main(connection, print);
  } catch (error) {
    console.error(error);
    process.exitCode = 1;
  } finally {
    await connection.close();
  }
}

/** Whether the module at `url` is the script node was started with. */
export function isMain(url: string): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return pathToFileURL(realpathSync(script)).href === url;
  } catch {
    return false;
  }
}
