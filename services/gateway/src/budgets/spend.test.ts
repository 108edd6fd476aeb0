import { describe, expect, it } from 'vitest';
import { MemorySpendLedger } from './spend';

const JAN = {
  label: '2026-01',
  start: Date.parse('2026-01-01T00:00:00Z'),
  end: Date.parse('2026-02-01T00:00:00Z'),
};
const FEB = { label: '2026-02', start: JAN.end, end: Date.parse('2026-03-01T00:00:00Z') };
const JAN_2 = {
  label: '2026-01-02',
  start: Date.parse('2026-01-02T00:00:00Z'),
  end: Date.parse('2026-01-03T00:00:00Z'),
};

describe('the in-memory spend ledger', () => {
  it('seeds a month once, even when asked twice at the same time, then adds', async () => {
    const ledger = new MemorySpendLedger();
    let seeds = 0;
    // The seed answers only once both callers asked: the second asks while the first waits.
    let answer: (n: number) => void = () => {};
    const seed = () => {
      seeds++;
      return new Promise<number>((r) => (answer = r));
    };
    const both = Promise.all([ledger.spent('key_1', JAN, seed), ledger.spent('key_1', JAN, seed)]);
    answer(1000);
    const [a, b] = await both;
    expect([a, b, seeds]).toEqual([1000, 1000, 1]);
    expect(ledger.add('key_1', '2026-01', 250)).toBe(1250);
    expect(ledger.spent('key_1', JAN, seed)).toBe(1250);
  });

  it('keeps what is added while the seed is read, and ignores months it does not track', async () => {
    const ledger = new MemorySpendLedger();
    const pending = ledger.spent('key_1', JAN, () => new Promise((r) => setTimeout(() => r(10), 5)));
    expect(ledger.add('key_1', '2026-01', 5)).toBeNull();
    expect(ledger.add('key_2', '2026-01', 99)).toBeNull();
    expect(await pending).toBe(15);
    expect(ledger.spent('key_2', JAN, async () => 0)).toBeInstanceOf(Promise);
  });

  it('forgets periods that ended when a new one starts, and keeps those still running', async () => {
    const ledger = new MemorySpendLedger();
    await ledger.spent('key_1', JAN, async () => 7);
    await ledger.spent('user_1', JAN, async () => 8);
    // A daily period of 2 January leaves the month of January alone.
    await ledger.spent('acct_1', JAN_2, async () => 1);
    expect(ledger.add('user_1', JAN.label, 1)).toBe(9);
    await ledger.spent('key_1', FEB, async () => 0);
    expect(ledger.add('user_1', JAN.label, 1)).toBeNull();
    let reseeded = false;
    await ledger.spent('key_1', JAN, async () => ((reseeded = true), 7));
    expect(reseeded).toBe(true);
  });

  it('a seed that fails is retried next time', async () => {
    const ledger = new MemorySpendLedger();
    await expect(
      ledger.spent('key_1', JAN, async () => Promise.reject(new Error('db down'))),
    ).rejects.toThrow('db down');
    expect(await ledger.spent('key_1', JAN, async () => 3)).toBe(3);
  });
});
