import { describe, expect, it } from 'vitest';
import { KeptBudget } from './budget';

const OWNER = { accountId: 'acct_1', keyId: 'key_1', memberId: null };

describe('KeptBudget', () => {
  it('forgets expired streams even when no cap is reached (Redis expires their events itself)', () => {
    let now = 0;
    const budget = new KeptBudget({ perKey: Infinity, perAccount: Infinity, total: Infinity }, () => now);
    const dropped: string[] = [];
    for (let i = 0; i < 100; i++) {
      const held = budget.hold(`req_${i}`, OWNER, () => dropped.push(`req_${i}`));
      budget.charge(held, 10);
      held.ended = true;
      held.expiresAt = now + 500;
    }
    expect(budget.streams).toBe(100);
    now = 2_000;
    budget.hold('req_new', OWNER, () => {});
    expect(budget.streams).toBe(1);
    expect(budget.total).toBe(0);
    expect(dropped).toHaveLength(100);
  });
});
