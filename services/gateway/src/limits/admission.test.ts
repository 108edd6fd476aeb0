import { describe, expect, it } from 'vitest';
import type { Principal } from '../auth/resolver';
import type { GatewayError } from '../lib/errors';
import { silentLogger } from '../lib/logger';
import type { CallRecord } from '../lib/call-record';
import { BudgetBook } from '../budgets/book';
import { BudgetGuard } from '../budgets/guard';
import { Admission } from './admission';
import { MemoryBuckets } from './buckets';
import { MemorySpendLedger } from '../budgets/spend';

function principal(limits: { rpm?: number; tpm?: number; cap?: number } = {}): Principal {
  return {
    account: { id: 'acct_1' },
    key: {
      id: 'key_1',
      memberId: null,
      limitRpm: limits.rpm ?? null,
      limitTpm: limits.tpm ?? null,
      limitMonthlySpendCents: limits.cap ?? null,
    },
  } as unknown as Principal;
}

function setup(seedCents = 0) {
  let now = Date.parse('2026-03-15T12:00:00Z');
  const clock = () => now;
  const usage = async () =>
    seedCents
      ? [
          {
            model: 'claude-opus-4-5',
            output_tokens: seedCents * 400,
            input_tokens: 0,
            cache_creation_5m_tokens: 0,
            cache_creation_1h_tokens: 0,
            cache_read_input_tokens: 0,
            web_search_requests: 0,
          },
        ]
      : [];
  const budgets = new BudgetGuard({
    ledger: new MemorySpendLedger(),
    book: new BudgetBook(async () => [], { ttlMs: 60_000, clock }),
    usage,
    clock,
    logger: silentLogger,
  });
  const admission = new Admission({ buckets: new MemoryBuckets(), budgets, clock, logger: silentLogger });
  return { admission, tick: (ms: number) => (now += ms), now: () => now };
}

const refusal = async (p: void | Promise<void>) => {
  try {
    await p;
    return null;
  } catch (err) {
    return err as GatewayError;
  }
};

const record = (at: number, usage: object): CallRecord =>
  ({
    accountId: 'acct_1',
    keyId: 'key_1',
    memberId: null,
    model: 'claude-opus-4-5',
    usage,
    createdAt: new Date(at),
  }) as CallRecord;

describe('admission', () => {
  it('costs nothing for keys without limits (once the account is known to have no budgets), or for endpoints other than messages', async () => {
    const { admission } = setup();
    await admission.admit(principal(), { endpoint: 'messages' });
    expect(admission.admit(principal(), { endpoint: 'messages' })).toBeUndefined();
    expect(admission.admit(principal({ rpm: 1 }), { endpoint: 'count_tokens' })).toBeUndefined();
  });

  it('refuses past the request rate, and admits again after the refill', async () => {
    const { admission, tick } = setup();
    const p = principal({ rpm: 2 });
    expect(await refusal(admission.admit(p, { endpoint: 'messages' }))).toBeNull();
    expect(await refusal(admission.admit(p, { endpoint: 'messages' }))).toBeNull();
    const err = await refusal(admission.admit(p, { endpoint: 'messages' }));
    expect(err).toMatchObject({ status: 429, type: 'rate_limit_error' });
    expect(err!.headers['retry-after']).toBe('30');
    tick(30_000);
    expect(await refusal(admission.admit(p, { endpoint: 'messages' }))).toBeNull();
  });

  it('charges recorded tokens (input, cache writes, output; not cache reads) to the token rate', async () => {
    const { admission, now } = setup();
    const p = principal({ tpm: 100 });
    expect(await refusal(admission.admit(p, { endpoint: 'messages' }))).toBeNull();
    admission.observe(
      record(now(), { input_tokens: 40, cache_read_input_tokens: 10_000, output_tokens: 59 }),
    );
    expect(await refusal(admission.admit(p, { endpoint: 'messages' }))).toBeNull();
    admission.observe(record(now(), { input_tokens: 0, cache_creation_input_tokens: 5, output_tokens: 0 }));
    const err = await refusal(admission.admit(p, { endpoint: 'messages' }));
    expect(err?.headers['anthropic-ratelimit-tokens-limit']).toBe('100');
  });

  it('stops a key at its monthly spend cap: seeded from rollups, then counted from recorded calls', async () => {
    const { admission, now } = setup(90);
    const p = principal({ cap: 100 });
    expect(await refusal(admission.admit(p, { endpoint: 'messages' }))).toBeNull();
    // 4,000 Opus 4.5 output tokens: 10 cents, which reaches the 100-cent cap.
    admission.observe(record(now(), { output_tokens: 4_000 }));
    const err = await refusal(admission.admit(p, { endpoint: 'messages' }));
    expect(err).toMatchObject({ status: 429, headers: { 'x-should-retry': 'false' } });
    expect(err!.headers['retry-after']).toBeUndefined();
  });
});
