import { accountQueries } from './accounts';
import { callQueries } from './calls';
import type { Database } from './database';
import { keyQueries } from './keys';

export type { AccountRecord, MemberRecord, PlanRecord } from './accounts';
export type { KeyRecord, ResolvedKey } from './keys';
export { openDatabase, type Database, type Sql } from './database';
export { migrate } from './migrate';

/** The gateway's only door to PostgreSQL. */
export function createStore(db: Database) {
  return {
    db,
    accounts: accountQueries(db.sql),
    keys: keyQueries(db.sql),
    calls: callQueries(db.sql),
    close: () => db.close(),
  };
}

export type Store = ReturnType<typeof createStore>;
