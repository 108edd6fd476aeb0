import { describe, expect, it } from 'vitest';
import type { Principal } from '../auth/resolver';
import { BudgetBook } from '../budgets/book';
import { BudgetGuard } from '../budgets/guard';
import type { CallRecord } from '../lib/call-record';
import { GatewayError } from '../lib/errors';
import { silentLogger } from '../lib/logger';
import { Admission, type Standing } from './admission';
import { MemoryBuckets } from './buckets';
import { expectedMicroUsd } from './ceiling';
import { CallEstimates } from './estimate';
import { RateLimits } from './rates';
import { RateSubjects } from './subjects';
import { MemorySpendLedger } from '../budgets/spend';
import { BUNDLED_CATALOG } from '../pricing/catalog/catalog';
import { Prices } from '../pricing/prices';

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

function setup(seedCents = 0, standing: Standing | null = null) {
  let now = Date.parse('2026-03-15T12:00:00Z');
  const clock = () => now;
  const prices = new Prices();
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
    prices,
    clock,
    logger: silentLogger,
  });
  const admission = new Admission({
    standing,
    rates: new RateLimits(new MemoryBuckets(), clock, silentLogger),
    subjects: new RateSubjects(new BudgetBook(async () => [], { ttlMs: 60_000, clock })),
    estimates: new CallEstimates(),
    budgets,
    prices,
    clock,
    logger: silentLogger,
    holdMs: 60_000,
  });
  return { admission, tick: (ms: number) => (now += ms), now: () => now };
}

const record = (at: number, usage: object | null, id = 'req_x'): CallRecord =>
  ({
    id,
    accountId: 'acct_1',
    keyId: 'key_1',
    memberId: null,
    model: 'claude-opus-4-5',
    usage,
    createdAt: new Date(at),
  }) as CallRecord;

const small = { model: 'claude-opus-4-5', inputBytes: 100, pdfPages: 0, maxTokens: 100 };
/** What a key's first call of `small` is expected to use: 29 input tokens (3.5 bytes each), all of its 100 max_tokens. */
const expected = new CallEstimates().estimate('key_0', 'req_0', small);

describe('admission', () => {
  it('costs nothing for keys without limits (once the account is known to have no budgets), or for endpoints other than messages', async () => {
    const { admission } = setup();
    expect(await admission.admit(principal(), 'messages')).toBeNull();
    expect(admission.admit(principal(), 'messages')).toBeNull();
    expect(admission.admit(principal({ rpm: 1 }), 'count_tokens')).toBeNull();
    expect(admission.reserve(principal(), 'req_1', small)).toBeNull();
  });

  it('checks the billing standing first, for every endpoint, and answers its 402 as the verdict', async () => {
    const paused = new GatewayError('billing_error', 'trial ended');
    const { admission } = setup(0, {
      admit() {
        throw paused;
      },
    });
    expect(admission.admit(principal({ rpm: 1 }), 'messages')).toBe(paused);
    expect(admission.admit(principal(), 'models')).toBe(paused);
  });

  it('refuses past the request rate, and admits again after the refill', async () => {
    const { admission, tick } = setup();
    const p = principal({ rpm: 2 });
    expect(await admission.admit(p, 'messages')).toBeNull();
    expect(await admission.admit(p, 'messages')).toBeNull();
    const err = await admission.admit(p, 'messages');
    expect(err).toMatchObject({ status: 429, type: 'rate_limit_error' });
    expect(err!.headers['retry-after']).toBe('30');
    tick(30_000);
    expect(await admission.admit(p, 'messages')).toBeNull();
  });

  it('a token limit holds what each call is expected to use: concurrent calls cannot take more than the bucket', async () => {
    const { admission, now } = setup();
    const tpm = (expected.inputTokens + expected.outputTokens) * 3 + 30;
    const p = principal({ tpm });
    const verdicts = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        expect(await admission.admit(p, 'messages')).toBeNull();
        return admission.reserve(p, `req_${i}`, small);
      }),
    );
    expect(verdicts.filter((v) => v === null)).toHaveLength(3);
    expect(verdicts.find((v) => v !== null)).toMatchObject({
      status: 429,
      headers: { 'anthropic-ratelimit-tokens-limit': String(tpm) },
    });
    // A call that used little gives back the rest of its hold: one more fits.
    admission.settle(record(now(), { input_tokens: 10, output_tokens: 10 }, 'req_0'));
    expect(await admission.reserve(p, 'req_10', small)).toBeNull();
    // A failed call (no usage) gives back all of it.
    admission.settle(record(now(), null, 'req_1'));
    expect(await admission.reserve(p, 'req_11', small)).toBeNull();
    expect(await admission.reserve(p, 'req_12', small)).toMatchObject({ status: 429 });
  });

  it('a call larger than the token limit waits for a full bucket, and what it used past it is owed', async () => {
    const { admission, now, tick } = setup();
    const p = principal({ tpm: 500 });
    // About 1,000 input tokens and 100 of output expected: more than the whole bucket.
    const large = { ...small, inputBytes: 3_500 };
    expect(await admission.reserve(p, 'req_1', large)).toBeNull();
    expect(await admission.reserve(p, 'req_2', large)).toMatchObject({ status: 429 });
    admission.settle(record(now(), { input_tokens: 600, output_tokens: 400 }, 'req_1'));
    tick(60_000);
    // 1,000 used against 500 a minute: the bucket is still 500 short after a minute.
    expect(await admission.admit(p, 'messages')).toMatchObject({ status: 429 });
  });

  it('stops a key at its monthly spend cap: seeded from rollups, then counted from recorded calls', async () => {
    const { admission, now } = setup(90);
    const p = principal({ cap: 100 });
    expect(await admission.admit(p, 'messages')).toBeNull();
    // 4,000 Opus 4.5 output tokens: 10 cents, which reaches the 100-cent cap.
    admission.settle(record(now(), { output_tokens: 4_000 }));
    const err = await admission.admit(p, 'messages');
    expect(err).toMatchObject({ status: 429, headers: { 'x-should-retry': 'false' } });
    expect(err!.headers['retry-after']).toBeUndefined();
  });

  it('holds what each call is expected to cost on a spend cap: 240 concurrent calls never hold more than the cap', async () => {
    const { admission, now } = setup();
    const ceilingCents = expectedMicroUsd(BUNDLED_CATALOG, small.model, expected) / 10_000;
    const capCents = 5;
    const p = principal({ cap: capCents });
    const verdicts = await Promise.all(
      Array.from({ length: 240 }, async (_, i) => {
        const first = await admission.admit(p, 'messages');
        return first ?? admission.reserve(p, `req_${i}`, small);
      }),
    );
    const admitted = verdicts.filter((v) => v === null).length;
    expect(admitted).toBe(Math.floor(capCents / ceilingCents));
    expect(verdicts.find((v) => v !== null)?.message).toMatch(
      /is expected to cost about \$0\.0\d .* left of this key's monthly spend cap of \$0\.05/,
    );
    // Every admitted call spends what it was expected to (its input written to the 1-hour cache):
    // the cap is reached, never passed.
    const input = expected.inputTokens;
    const full = {
      input_tokens: 0,
      cache_creation_input_tokens: input,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: input },
      output_tokens: expected.outputTokens,
    };
    for (let i = 0; i < 240; i++) if (verdicts[i] === null) admission.settle(record(now(), full, `req_${i}`));
    await admission.settled();
    expect(await admission.admit(p, 'messages')).toBeNull();
    expect(await admission.reserve(p, 'req_more', small)).toMatchObject({ status: 429 });
  });
});
