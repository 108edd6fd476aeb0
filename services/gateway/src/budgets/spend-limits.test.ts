import { describe, expect, it } from 'vitest';
import type { SpendLimitRecord } from './spend-limit-queries';
import { effectiveLimits, spendLimitRules } from './spend-limits';

const at = new Date('2026-11-01T00:00:00Z');
const limit = (o: Partial<SpendLimitRecord>): SpendLimitRecord => ({
  id: 'spl_x',
  accountId: 'acct_1',
  scopeType: 'organization',
  scopeId: 'acct_1',
  period: 'monthly',
  amountCents: 50_000,
  createdAt: at,
  updatedAt: at,
  ...o,
});

const org = limit({ id: 'spl_org' });
const group = limit({ id: 'spl_grp', scopeType: 'rbac_group', scopeId: 'rbacgrp_a', amountCents: 10_000 });
const loose = limit({ id: 'spl_loose', scopeType: 'rbac_group', scopeId: 'rbacgrp_b', amountCents: 90_000 });
const own = limit({
  id: 'spl_own',
  scopeType: 'user',
  scopeId: 'user_1',
  amountCents: null,
  period: 'daily',
});

describe('spend limits, resolved per principal', () => {
  it("a member's own limit wins for its period; else the tightest of their groups' and the organization's", () => {
    const e = effectiveLimits([org, group, loose, own], 'acct_1', 'user_1', ['rbacgrp_a', 'rbacgrp_b']);
    expect(e.map((x) => [x.period, x.amountCents, x.source.id])).toEqual([
      ['daily', null, 'spl_own'],
      ['monthly', 10_000, 'spl_grp'],
    ]);
  });

  it("another member's limit and groups they are not in do not apply", () => {
    const e = effectiveLimits([org, group, own], 'acct_1', 'user_2', ['rbacgrp_b']);
    expect(e.map((x) => x.source.id)).toEqual(['spl_org']);
  });

  it('as budgets: on the member counter, or on the key for a key of no member; no-limit overrides add none', () => {
    const rules = spendLimitRules([org, group, own], 'acct_1', 'key_1', 'user_1', ['rbacgrp_a']);
    expect(rules.map((r) => [r.id, r.scope, r.targetId, r.limitCents, r.period, r.hardCap])).toEqual([
      ['spl_grp', 'user', 'user_1', 10_000, 'monthly', true],
    ]);
    const app = spendLimitRules([org, group], 'acct_1', 'key_9', null, []);
    expect(app.map((r) => [r.id, r.scope, r.targetId])).toEqual([['spl_org', 'api_key', 'key_9']]);
  });
});
