import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBase62 } from '../src/lib/ids';
import { createStore, migrate, openDatabase, type Store } from '../src/store';
import { writeAudit } from '../src/store/audit';
import { inTransaction } from '../src/store/database';
import { TEST_DATABASE_URL } from './harness';

const dataDir = mkdtempSync(join(tmpdir(), 'keygate-audit-'));
const schema = `kg_t_${randomBase62(10).toLowerCase()}`;
let store: Store;

beforeAll(async () => {
  store = createStore(await openDatabase({ url: TEST_DATABASE_URL, dataDir, schema }));
  await migrate(store.db.sql);
});

afterAll(async () => {
  await store?.close();
  if (TEST_DATABASE_URL) {
    const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
    await sql`drop schema if exists ${sql(schema)} cascade`;
    await sql.end();
  }
  rmSync(dataDir, { recursive: true, force: true });
});

/** Writes `n` entries in one transaction, as one change does, and returns their actions in write order. */
async function writeMany(accountId: string, n: number): Promise<string[]> {
  const actions = Array.from({ length: n }, (_, i) => `step.${String(i).padStart(3, '0')}.${randomBase62(4)}`);
  await inTransaction(store.db.sql, async (tx) => {
    for (const action of actions) await writeAudit(tx, accountId, { actor: 'cli', action, targetId: null });
    // A coarse clock (the embedded database, a busy host) gives entries of one change one timestamp.
    await tx`update audit_log set created_at = now() where account_id = ${accountId}`;
  });
  return actions;
}

describe('the audit log lists entries in write order', () => {
  it('many entries of one transaction sharing a timestamp: newest first, exactly reversed', async () => {
    const account = `acct_${randomBase62(8)}`;
    const written = await writeMany(account, 60);
    expect(new Set((await store.db.sql`select created_at from audit_log where account_id = ${account}`).map((r) => r.created_at.getTime())).size).toBe(1);
    const page = await store.audit.list(account, {}, { limit: 100 });
    expect(page.rows.map((r) => r.action)).toEqual([...written].reverse());
  });

  it('page by page with after_id and back with before_id, in the same order', async () => {
    const account = `acct_${randomBase62(8)}`;
    const newestFirst = (await writeMany(account, 25)).reverse();
    const seen: string[] = [];
    let after: string | null = null;
    const ids: string[] = [];
    for (;;) {
      const page = await store.audit.list(account, {}, { limit: 7, afterId: after });
      seen.push(...page.rows.map((r) => r.action));
      ids.push(...page.rows.map((r) => r.id));
      if (!page.hasMore) break;
      after = page.rows.at(-1)!.id;
    }
    expect(seen).toEqual(newestFirst);
    const back = await store.audit.list(account, {}, { limit: 5, beforeId: ids[12]! });
    expect(back.rows.map((r) => r.action)).toEqual(newestFirst.slice(7, 12));
    expect(back.hasMore).toBe(true);
  });
});
