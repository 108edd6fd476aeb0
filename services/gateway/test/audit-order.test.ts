import { describe, expect, it } from 'vitest';
import { randomBase62 } from '../src/lib/ids';
import { writeAudit } from '../src/tenancy/audit-queries';
import { inTransaction } from '../src/store/database';
import { useTestStore } from './harness';

const db = useTestStore();

/** Writes `n` entries in one transaction, as one change does, and returns their actions in write order. */
async function writeMany(accountId: string, n: number): Promise<string[]> {
  const actions = Array.from(
    { length: n },
    (_, i) => `step.${String(i).padStart(3, '0')}.${randomBase62(4)}`,
  );
  await inTransaction(db.store.db.sql, async (tx) => {
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
    expect(
      new Set(
        (await db.store.db.sql`select created_at from audit_log where account_id = ${account}`).map((r) =>
          r.created_at.getTime(),
        ),
      ).size,
    ).toBe(1);
    const page = await db.store.audit.list(account, {}, { limit: 100 });
    expect(page.rows.map((r) => r.action)).toEqual([...written].reverse());
  });

  it('page by page with after_id and back with before_id, in the same order', async () => {
    const account = `acct_${randomBase62(8)}`;
    const newestFirst = (await writeMany(account, 25)).reverse();
    const seen: string[] = [];
    let after: string | null = null;
    const ids: string[] = [];
    for (;;) {
      const page = await db.store.audit.list(account, {}, { limit: 7, afterId: after });
      seen.push(...page.rows.map((r) => r.action));
      ids.push(...page.rows.map((r) => r.id));
      if (!page.hasMore) break;
      after = page.rows.at(-1)!.id;
    }
    expect(seen).toEqual(newestFirst);
    const back = await db.store.audit.list(account, {}, { limit: 5, beforeId: ids[12]! });
    expect(back.rows.map((r) => r.action)).toEqual(newestFirst.slice(7, 12));
    expect(back.hasMore).toBe(true);
  });
});
