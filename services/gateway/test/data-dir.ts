import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A fresh data dir under the temp dir. mkdtemp makes it 0700; as root the embedded PostgreSQL
 * runs as the postgres user, which must enter it (the gateway refuses a private folder), so
 * this folder of the test's own is opened to 0711 as a user's `mkdir` would leave it (0755).
 */
export function newDataDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o711);
  return dir;
}
