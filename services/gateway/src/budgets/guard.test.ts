import { describe, expect, it } from 'vitest';
import type { Principal } from '../auth/resolver';
import type { GatewayError } from '../lib/errors';
import { silentLogger } from '../lib/logger';
import { MemorySpendLedger } from './spend';
import type { BudgetRecord } from './budget-queries';
import type { CallRecord } from '../lib/call-record';
import { BudgetBook } from './book';
import { BudgetGuard, type Crossing } from './guard';
import { Prices } from '../pricing/prices';

const NOW = Date.parse('2026-03-15T12:00:00Z');

function budget(b: Partial<BudgetRecord> & Pick<BudgetRecord, 'id' | 'scope' | 'limitCents'>): BudgetRecord {
  return {
    accountId: 'acct_1',
    targetId: null,
    name: b.id,
    hardCap: true,
    thresholds: [],
    period: 'monthly',
    createdBy: null,
    createdAt: new Date(0),
    ...b,
  };
}

function setup(budgets: BudgetRecord[], seeded: Record<string, number> = {}) {
  const crossings: Crossing[] = [];
  let reads = 0;
  const guard = new BudgetGuard({
    ledger: new MemorySpendLedger(),
    prices: new Prices(),
    book: new BudgetBook(async () => (reads++, budgets), { ttlMs: 60_000, clock: () => NOW }),
    // Seeds: output tokens of Opus 4.5 at $25/MTok, 400 tokens a cent.
    usage: async (b) => [
      {
        model: 'claude-opus-4-5',
        output_tokens: (seeded[b.targetId ?? b.accountId] ?? 0) * 400,
        input_tokens: 0,
        cache_creation_5m_tokens: 0,
        cache_creation_1h_tokens: 0,
        cache_read_input_tokens: 0,
        web_search_requests: 0,
      },
    ],
    clock: () => NOW,
    logger: silentLogger,
    onCrossing: (c) => crossings.push(c),
  });
  return { guard, crossings, reads: () => reads };
}

const who = (keyId: string, memberId: string | null, cap: number | null = null) =>
  ({
    account: { id: 'acct_1' },
    key: { id: keyId, memberId, limitMonthlySpendCents: cap },
  }) as unknown as Principal;
const spend = (keyId: string, memberId: string | null, cents: number): CallRecord =>
  ({
    accountId: 'acct_1',
    keyId,
    memberId,
    model: 'claude-opus-4-5',
    usage: { input_tokens: 0, output_tokens: cents * 400 },
    createdAt: new Date(NOW),
  }) as CallRecord;
const refusal = async (p: void | Promise<void>) =>
  p?.then(
    () => null,
    (e: GatewayError) => e,
  ) ?? null;

describe('the budget guard', () => {
  it('charges a call admitted on a read a change overtook: that read is kept as stale, never dropped', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const budgets = [budget({ id: 'acct', scope: 'account', limitCents: 100 })];
    const book = new BudgetBook(async () => (await gate, budgets), { ttlMs: 60_000, clock: () => NOW });
    const guard = new BudgetGuard({
      ledger: new MemorySpendLedger(),
      prices: new Prices(),
      book,
      usage: async () => [],
      clock: () => NOW,
      logger: silentLogger,
    });
    const admitted = guard.admit(who('key_a', null));
    // The budget's own creation is heard while the first read is on its way.
    book.apply('budgets:acct_1');
    release();
    await admitted;
    expect(guard.capped(who('key_a', null))).toBe(true);
    guard.observe(spend('key_a', null, 100));
    expect(await refusal(guard.admit(who('key_a', null)))).toMatchObject({ status: 429 });
  });

  it('reads an account budgets once, then admits from memory', async () => {
    const { guard, reads } = setup([]);
    await guard.admit(who('key_a', null));
    expect(guard.admit(who('key_a', null))).toBeUndefined();
    expect(guard.admit(who('key_b', null))).toBeUndefined();
    expect(reads()).toBe(1);
  });

  it('a member budget counts every key of the member, and only theirs', async () => {
    const { guard } = setup([budget({ id: 'bdg_m', scope: 'user', targetId: 'user_1', limitCents: 100 })], {
      user_1: 60,
    });
    expect(await refusal(guard.admit(who('key_a', 'user_1')))).toBeNull();
    guard.observe(spend('key_b', 'user_1', 30));
    guard.observe(spend('key_c', 'user_2', 500));
    expect(await refusal(guard.admit(who('key_a', 'user_1')))).toBeNull();
    guard.observe(spend('key_a', 'user_1', 10));
    const err = await refusal(guard.admit(who('key_b', 'user_1')));
    // Money, not rate: billing_error, and the SDKs are told not to retry.
    expect(err).toMatchObject({
      status: 429,
      type: 'billing_error',
      headers: { 'x-should-retry': 'false' },
    });
    expect(err!.message).toMatch(
      /member's monthly budget 'bdg_m' of \$1\.00 \(bdg_m\): \$1\.00 spent since 2026-03-01T00:00:00Z, \$0\.00 left\. It resets at 2026-04-01T00:00:00Z\. An admin of this account can raise it/,
    );
    expect(await refusal(guard.admit(who('key_c', 'user_2')))).toBeNull();
  });

  it('an account budget counts keys of every member and keys of no member', async () => {
    const { guard } = setup([budget({ id: 'bdg_a', scope: 'account', limitCents: 50, period: 'daily' })]);
    await guard.admit(who('key_a', 'user_1'));
    guard.observe(spend('key_a', 'user_1', 25));
    guard.observe(spend('key_z', null, 25));
    expect((await refusal(guard.admit(who('key_z', null))))?.message).toMatch(/account's daily budget/);
  });

  it('soft thresholds fire once each, in order, and a soft budget never refuses', async () => {
    const { guard, crossings } = setup(
      [
        budget({
          id: 'bdg_s',
          scope: 'api_key',
          targetId: 'key_a',
          limitCents: 100,
          hardCap: false,
          thresholds: [50, 80, 100],
        }),
      ],
      { key_a: 40 },
    );
    await guard.admit(who('key_a', null));
    guard.observe(spend('key_a', null, 5));
    expect(crossings).toEqual([]);
    guard.observe(spend('key_a', null, 45));
    guard.observe(spend('key_a', null, 1));
    expect(crossings.map((c) => [c.threshold, c.spentCents])).toEqual([
      [50, 90],
      [80, 90],
    ]);
    guard.observe(spend('key_a', null, 200));
    expect(crossings.map((c) => c.threshold)).toEqual([50, 80, 100]);
    expect(crossings[2]).toMatchObject({
      budget: { id: 'bdg_s' },
      period: { label: '2026-03' },
      spentCents: 291,
    });
    expect(await refusal(guard.admit(who('key_a', null)))).toBeNull();
  });

  it("the key's own monthly spend cap is one more hard budget", async () => {
    const { guard } = setup([], { key_a: 99 });
    expect(await refusal(guard.admit(who('key_a', null, 100)))).toBeNull();
    guard.observe(spend('key_a', null, 1));
    expect((await refusal(guard.admit(who('key_a', null, 100))))?.message).toMatch(
      /monthly spend cap of \$1\.00/,
    );
    // Removing the cap admits again.
    expect(await refusal(guard.admit(who('key_a', null, null)))).toBeNull();
  });
});
