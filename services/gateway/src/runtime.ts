import type { Config } from './config';
import { assertNotServed, persistentSecret } from './lib/data-dir';
import type { Logger } from './lib/logger';
import { resealSecrets } from './accounts/reseal';
import { SecretBox } from './lib/secret-box';
import { createStore, type WholeStore } from './stores';
import { migrate, openDatabase, type Database } from './store';

export interface Runtime {
  store: WholeStore;
  box: SecretBox;
  embedded: boolean;
  operatorToken: string | null;
  close(): Promise<void>;
}

export const GATEWAY_OWNER = 'a keygate gateway';

const open = (config: Config, schema: string | null | undefined, owner: string | undefined) =>
  openDatabase({
    url: config.databaseUrl,
    dataDir: config.dataDir,
    ...(schema ? { schema } : {}),
    ...(owner ? { owner } : {}),
  });

/**
 * Starts opening a gateway's database and returns at once: `keygate serve` runs PostgreSQL's
 * start (initdb on a fresh data dir) while node loads the server code. A data dir another
 * gateway serves is refused first, as `startGateway` does.
 */
export function openGatewayDatabase(config: Config): Promise<Database> {
  const opening = (async () => {
    if (!config.databaseUrl) assertNotServed(config.dataDir);
    return open(config, config.dbSchema, GATEWAY_OWNER);
  })();
  // Awaited by the gateway once loaded; a failure meanwhile is not an unhandled rejection.
  opening.catch(() => {});
  return opening;
}

/**
 * Opens the database (external, or embedded in the data dir), applies migrations, and
 * loads the secrets. Shared by the server and the CLI so both see the same store.
 */
export async function openRuntime(
  config: Config,
  opts: {
    schema?: string;
    logger?: Logger;
    database?: Database;
    opening?: Promise<Database>;
    owner?: string;
  } = {},
): Promise<Runtime> {
  const embedded = opts.database?.embedded ?? !config.databaseUrl;
  const secret = config.secret ?? persistentSecret(config.dataDir, 'secret');
  const operatorToken =
    config.operatorToken ?? (embedded ? persistentSecret(config.dataDir, 'operator-token') : null);
  const schema = opts.schema ?? config.dbSchema;
  // A database opened by someone else (a second instance in tests) stays theirs to close.
  const shared = opts.database;
  const db = shared ?? (await (opts.opening ?? open(config, schema, opts.owner)));
  try {
    const applied = await migrate(db.sql);
    if (applied.length) opts.logger?.info('migrations applied', { applied });
  } catch (err) {
    if (!shared) await db.close();
    throw err;
  }
  const store = createStore(db);
  const box = new SecretBox(secret, { previous: config.previousSecret });
  try {
    await resealSecrets(store, box, opts.logger);
  } catch (err) {
    if (!shared) await db.close();
    throw err;
  }
  return {
    store,
    box,
    embedded,
    operatorToken,
    close: async () => (shared ? undefined : db.close()),
  };
}
