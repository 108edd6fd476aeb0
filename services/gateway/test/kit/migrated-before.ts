import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrate, type Store } from '../../src/store';
import { openTestStore } from '../harness';

/** The gateway's migrations folder: `migrate(sql, MIGRATIONS)` brings a database to today's. */
export const MIGRATIONS = fileURLToPath(new URL('../../migrations/', import.meta.url));

/**
 * A fresh test database at the release before the migration `first` (e.g. `'082_'`): every
 * migration numbered before it, run as that release ran them, to seed before upgrading.
 */
export async function storeMigratedBefore(first: string): Promise<{ store: Store; close(): Promise<void> }> {
  const before = mkdtempSync(join(tmpdir(), 'keygate-migrations-'));
  for (const f of readdirSync(MIGRATIONS).filter((f) => f < first))
    copyFileSync(join(MIGRATIONS, f), join(before, f));
  const opened = await openTestStore();
  try {
    await migrate(opened.store.db.sql, before);
  } finally {
    rmSync(before, { recursive: true, force: true });
  }
  return opened;
}
