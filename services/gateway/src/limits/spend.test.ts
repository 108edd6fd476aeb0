import { describe, expect, it } from 'vitest';
import { MemorySpendLedger } from './spend';

describe('the in-memory spend ledger', () => {
  it('seeds a month once, even when asked twice at the same time, then adds', async () => {
    const ledger = new MemorySpendLedger();
    let seeds = 0;
    const seed = async () => {
      seeds++;
      await new Promise((r) => setTimeout(r, 5));
      return 1000;
    };
    const [a, b] = await Promise.all([ledger.spent('key_1', '2026-01', seed), ledger.spent('key_1', '2026-01', seed)]);
    expect([a, b, seeds]).toEqual([1000, 1000, 1]);
    ledger.add('key_1', '2026-01', 250);
    expect(ledger.spent('key_1', '2026-01', seed)).toBe(1250);
  });

  it('keeps what is added while the seed is read, and ignores months it does not track', async () => {
    const ledger = new MemorySpendLedger();
    const pending = ledger.spent('key_1', '2026-01', () => new Promise((r) => setTimeout(() => r(10), 5)));
    ledger.add('key_1', '2026-01', 5);
    ledger.add('key_2', '2026-01', 99);
    expect(await pending).toBe(15);
    expect(ledger.spent('key_2', '2026-01', async () => 0)).toBeInstanceOf(Promise);
  });

  it('forgets earlier months when a new one starts', async () => {
    const ledger = new MemorySpendLedger();
    await ledger.spent('key_1', '2026-01', async () => 7);
    await ledger.spent('key_1', '2026-02', async () => 0);
    let reseeded = false;
    await ledger.spent('key_1', '2026-01', async () => ((reseeded = true), 7));
    expect(reseeded).toBe(true);
  });

  it('a seed that fails is retried next time', async () => {
    const ledger = new MemorySpendLedger();
    await expect(ledger.spent('key_1', '2026-01', async () => Promise.reject(new Error('db down')))).rejects.toThrow('db down');
    expect(await ledger.spent('key_1', '2026-01', async () => 3)).toBe(3);
  });
});
