import { describe, expect, it } from 'vitest';
import { randomBase62 } from '../src/lib/ids';
import { inTransaction, onCommitted } from '../src/store/database';
import { invalidate } from '../src/store/invalidations';
import { useTestStore } from './harness';

const db = useTestStore();

describe("this process's own invalidations", () => {
  it('reach its listener when the transaction commits, before the write returns', async () => {
    const heard: string[] = [];
    const stop = onCommitted(db.store.db.sql, (p) => heard.push(p));
    const account = `acct_${randomBase62(8)}`;
    try {
      await inTransaction(db.store.db.sql, async (tx) => {
        await invalidate(tx, `budgets:${account}`);
        await invalidate(tx, `key:key_${account}`);
        // Not before the commit: a call admitted now must still see what is committed.
        expect(heard).toEqual([]);
      });
      expect(heard).toEqual([`budgets:${account}`, `key:key_${account}`]);
    } finally {
      stop();
    }
  });

  it('never for a transaction that rolls back, nor after the listener stopped', async () => {
    const heard: string[] = [];
    const stop = onCommitted(db.store.db.sql, (p) => heard.push(p));
    await expect(
      inTransaction(db.store.db.sql, async (tx) => {
        await invalidate(tx, 'budgets:acct_rolled_back');
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    stop();
    await inTransaction(db.store.db.sql, (tx) => invalidate(tx, 'budgets:acct_after_stop'));
    expect(heard).toEqual([]);
  });
});
