import { describe, expect, it } from 'vitest';
import type { Principal } from '../auth/resolver';
import { GatewayError } from '../lib/errors';
import { silentLogger } from '../lib/logger';
import type { ScopeRateLimitRecord } from '../budgets/rate-limit-queries';
import { MemoryBuckets } from './buckets';
import { RateLimits } from './rates';
import { subjectsOf, type LimitSubject } from './subjects';

const principal = (memberId: string | null, groupIds: string[], rpm: number | null = null) =>
  ({
    account: { id: 'acct_1' },
    key: { id: 'key_1', memberId, limitRpm: rpm, limitTpm: null, limitItpm: null, limitOtpm: null },
    groupIds,
  }) as unknown as Principal;

const row = (scopeType: ScopeRateLimitRecord['scopeType'], scopeId: string, rpm: number, source = 'set') =>
  ({ id: `rl_${scopeId}`, scopeType, scopeId, rpm, itpm: null, otpm: null, source }) as ScopeRateLimitRecord;

describe('which rate limits a call is under', () => {
  const rows = [
    row('organization', 'acct_1', 500),
    row('rbac_group', 'grp_a', 50),
    row('rbac_group', 'grp_b', 60),
    row('user', 'user_1', 10),
    row('user', '*', 2000, 'plan'),
  ];

  it("the key's, the member's own (not the plan's), the member's groups' only, and the account's", () => {
    const s = subjectsOf(principal('user_1', ['grp_a'], 7), rows);
    expect(s.map((x) => [x.scope, x.id, x.limits.rpm, x.source])).toEqual([
      ['api_key', 'key_1', 7, 'set'],
      ['organization', 'acct_1', 500, 'set'],
      ['rbac_group', 'grp_a', 50, 'set'],
      ['user', 'user_1', 10, 'set'],
    ]);
  });

  it("a member without a limit of their own is under the plan's default, counted per member", () => {
    const s = subjectsOf(principal('user_2', []), rows);
    expect(s.map((x) => [x.scope, x.id, x.limits.rpm, x.source])).toEqual([
      ['organization', 'acct_1', 500, 'set'],
      ['user', 'user_2', 2000, 'plan'],
    ]);
  });

  it('a key of no member is under its own and the account limits only', () => {
    expect(subjectsOf(principal(null, []), rows).map((x) => x.scope)).toEqual(['organization']);
    expect(subjectsOf(principal(null, []), [])).toEqual([]);
  });
});

describe('several limits on one call', () => {
  const now = Date.parse('2026-11-29T09:00:00Z');
  const subject = (scope: LimitSubject['scope'], id: string, rpm: number): LimitSubject => ({
    scope,
    id,
    limits: { rpm, itpm: null, otpm: null, tpm: null },
    source: 'set',
  });

  it("the headers are the tightest limit's; a refusal gives back the requests other limits took", () => {
    const rates = new RateLimits(new MemoryBuckets(), () => now, silentLogger);
    const key = subject('api_key', 'key_1', 100);
    const member = subject('user', 'user_1', 2);
    const both = [key, member];
    rates.check('key_1', both);
    const headers = rates.reserve('c1', both, { inputTokens: 1, cachedTokens: 0, outputTokens: 1 });
    expect(headers).toMatchObject({
      'anthropic-ratelimit-requests-limit': '2',
      'anthropic-ratelimit-requests-remaining': '1',
    });
    rates.check('key_1', both);
    let refused: unknown;
    try {
      rates.check('key_1', both);
    } catch (e) {
      refused = e;
    }
    expect(refused).toBeInstanceOf(GatewayError);
    expect((refused as GatewayError).message).toMatch(/^This member's rate limit of 2 requests per minute/);
    expect((refused as GatewayError).reason).toBe('rate_limit:requests:user:user_1');
    // The key's own bucket got its request back: 98 left of 100 after two admitted calls and one refused.
    const keyOnly = rates.reserve('c2', [key], { inputTokens: 1, cachedTokens: 0, outputTokens: 1 });
    expect((keyOnly as Record<string, string>)['anthropic-ratelimit-requests-remaining']).toBe('98');
  });
});
