import type { Config } from './config';
import { persistentSecret } from './lib/data-dir';
import type { Logger } from './lib/logger';
import { SecretBox } from './lib/secret-box';
import { createStore, migrate, openDatabase, type Database, type Store } from './store';

export interface Runtime {
  store: Store;
  box: SecretBox;
  embedded: boolean;
  operatorToken: string | null;
  close(): Promise<void>;
}

/**
 * Opens the database (external, or embedded in the data dir), applies migrations, and
 * loads the secrets. Shared by the server and the CLI so both see the same store.
 */
export async function openRuntime(config: Config, opts: { schema?: string; logger?: Logger; database?: Database; owner?: string } = {}): Promise<Runtime> {
  const embedded = opts.database?.embedded ?? !config.databaseUrl;
  const secret = config.secret ?? persistentSecret(config.dataDir, 'secret');
  const operatorToken = config.operatorToken ?? (embedded ? persistentSecret(config.dataDir, 'operator-token') : null);
  const schema = opts.schema ?? config.dbSchema;
  // A database opened by someone else (a second instance in tests) stays theirs to close.
  const shared = opts.database;
  const db = shared ?? (await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, ...(schema ? { schema } : {}), ...(opts.owner ? { owner: opts.owner } : {}) }));
  try {
    const applied = await migrate(db.sql);
    if (applied.length) opts.logger?.info('migrations applied', { applied });
  } catch (err) {
    if (!shared) await db.close();
    throw err;
  }
  return { store: createStore(db), box: new SecretBox(secret), embedded, operatorToken, close: async () => (shared ? undefined : db.close()) };
}
