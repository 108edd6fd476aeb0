import type { Database } from './database';
import { pendingMigrations } from './migrate';

export type { Page, PageQuery } from './pagination';
export { INVALIDATION_CHANNEL, watchInvalidations, type Invalidation } from './invalidations';
export { openDatabase, type Database, type Sql } from './database';
export { databaseUnavailable } from '../lib/database-unavailable';
export { DatabaseWatch } from './database-watch';
export { migrate } from './migrate';

/**
 * What every room reaches as `deps.store`: the database, and each room's queries. The queries live
 * in their rooms (`*-queries.ts`); the composition root (`../stores.ts`) adds their fields here and
 * builds them, so this room imports none of them.
 */
export interface Store {
  db: Database;
  /** What readiness asks, on a connection of its own: does the database answer, and is every migration applied. */
  health: { ping(): Promise<void>; pendingMigrations(): Promise<string[]> };
  close(): Promise<void>;
}

/** What readiness asks, on a connection of its own: does the database answer, and is every migration applied. */
export function databaseHealth(db: Database): Store['health'] {
  return {
    ping: async () => void (await db.probe`select 1`),
    pendingMigrations: () => pendingMigrations(db.probe),
  };
}
