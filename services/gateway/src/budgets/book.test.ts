import { describe, expect, it } from 'vitest';
import { BudgetBook } from './book';

const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

/** Lets the reads started so far finish (the store here answers at once). */
const settle = () => new Promise((r) => setImmediate(r));

function setup() {
  let now = 1_000_000;
  const db = { down: false, reads: 0, budgets: ['b1'], error: null as Error | null };
  const book = new BudgetBook<string>(
    async () => {
      db.reads++;
      if (db.down) throw refused();
      if (db.error) throw db.error;
      return db.budgets;
    },
    { ttlMs: 30_000, clock: () => now },
  );
  return { book, db, tick: (ms: number) => (now += ms) };
}

describe('BudgetBook while the database is unreachable', () => {
  it('answers the budgets last read at once, reading again at most every second, until a read succeeds', async () => {
    const { book, db, tick } = setup();
    expect(await book.of('acct_1')).toEqual(['b1']);
    db.down = true;
    tick(30_001);
    // The read that finds the database away answers what was read before.
    expect(await book.of('acct_1')).toEqual(['b1']);
    expect(db.reads).toBe(2);
    // Known away: no read, no wait.
    expect(book.of('acct_1')).toEqual(['b1']);
    expect(db.reads).toBe(2);
    tick(1_000);
    expect(book.of('acct_1')).toEqual(['b1']);
    expect(db.reads).toBe(3);
    await settle();
    db.down = false;
    db.budgets = ['b1', 'b2'];
    tick(1_000);
    book.of('acct_1');
    await settle();
    expect(book.of('acct_1')).toEqual(['b1', 'b2']);
  });

  it('fails a read with nothing to fall back on, and a read whose error is no outage', async () => {
    const { book, db, tick } = setup();
    db.down = true;
    await expect(book.of('acct_1')).rejects.toThrow(/ECONNREFUSED/);
    db.down = false;
    await book.of('acct_1');
    db.error = new Error('relation "budgets" does not exist');
    tick(30_001);
    await expect(book.of('acct_1')).rejects.toThrow('does not exist');
  });
});
