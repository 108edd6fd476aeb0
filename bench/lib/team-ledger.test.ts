import { describe, expect, it } from 'vitest';
import { memberOutcome, teamOutcome, type LedgerCall, type MemberLimit } from './team-ledger';

const LIMIT: MemberLimit = {
  memberId: 'user_a',
  limitUsd: 10,
  seededUsd: 9,
  rpm: 10,
  itpm: 1_000,
  otpm: 500,
};

const call = (startMs: number, endMs: number, usd: number, o: Partial<LedgerCall> = {}): LedgerCall => ({
  memberId: 'user_a',
  status: 200,
  refusal: null,
  startMs,
  endMs,
  usd,
  inputTokens: 100,
  outputTokens: 50,
  ...o,
});
const refusal = (at: number, rule = 'spend_limit:spl_1') =>
  call(at, at + 1, 0, { status: 429, refusal: rule });

describe('a member against its spend limit', () => {
  it('three streams in flight at the limit: the overshoot in dollars and calls, and the streams at the crossing', () => {
    const calls = [
      call(0, 100, 0.5), // $9.50 spent at 100
      call(150, 300, 0.4), // $9.90 at 300
      call(200, 400, 0.3), // crosses: $10.20 at 400
      call(250, 500, 0.2), // $10.40 at 500
      call(260, 600, 0.1), // $10.50 at 600
      refusal(700),
    ];
    const o = memberOutcome(LIMIT, calls);
    expect(o.spentUsd).toBeCloseTo(10.5);
    expect(o.overshootUsd).toBeCloseTo(0.5);
    expect(o.overshootCalls).toBe(3);
    // At 400 the crossing call and the two that began at 250 and 260 were in flight.
    expect(o.streamsAtCrossing).toBe(3);
    expect(o.firstRefusalAt).toBeCloseTo(1.05);
    expect(o.refusals).toBe(1);
    expect(o.early).toBe(0);
  });

  it('a refusal counts what had ended before it began, so one at 92% is early', () => {
    const calls = [call(0, 100, 0.2), refusal(150), call(120, 400, 0.5), refusal(500)];
    // The second came at 97%: not early. Nothing passed the limit.
    expect(memberOutcome(LIMIT, calls)).toEqual({
      memberId: 'user_a',
      limitUsd: 10,
      spentUsd: 9.7,
      firstRefusalAt: expect.closeTo(0.92),
      refusals: 2,
      early: 1,
      rateRefusals: 0,
      overshootUsd: 0,
      overshootCalls: 0,
      streamsAtCrossing: 0,
    });
  });

  it('a rate limit refusal is early when the minute before it used less than 95% of that limit', () => {
    const served = Array.from({ length: 9 }, (_, i) => call(i * 1_000, i * 1_000 + 10, 0));
    const at = (n: number, rule: string) =>
      memberOutcome(LIMIT, [...served.slice(0, n), refusal(30_000, rule)]);
    expect(at(9, 'rate_limit:requests').early).toBe(1); // 9 of 10 requests
    expect(at(9, 'rate_limit:requests').rateRefusals).toBe(1);
    expect(
      memberOutcome(LIMIT, [...served, call(9_500, 9_600, 0), refusal(30_000, 'rate_limit:requests')]).early,
    ).toBe(0);
    expect(at(9, 'rate_limit:input_tokens').early).toBe(1); // 900 of 1,000
    expect(at(9, 'rate_limit:output_tokens').early).toBe(1); // 450 of 500
  });

  it('calls outside the minute before a rate limit refusal do not count', () => {
    const old = Array.from({ length: 10 }, (_, i) => call(i, i + 5, 0));
    expect(memberOutcome(LIMIT, [...old, refusal(70_000, 'rate_limit:requests')]).early).toBe(1);
    expect(memberOutcome(LIMIT, [...old, refusal(30_000, 'rate_limit:requests')]).early).toBe(0);
  });
});

describe('the team', () => {
  it('adds early refusals and names the worst overshoots', () => {
    const a = memberOutcome(LIMIT, [call(0, 100, 1.5), refusal(200)]);
    const b = memberOutcome({ ...LIMIT, memberId: 'user_b', seededUsd: 0 }, [refusal(10)]);
    const t = teamOutcome([a, b]);
    expect(t.early).toBe(1);
    expect(t.worstUsd?.memberId).toBe('user_a');
    expect(t.worstUsd?.overshootUsd).toBeCloseTo(0.5);
    expect(t.lowestFirstRefusal).toBe(0);
    expect(t.refused).toBe(2);
    expect(t.reachedLimit).toBe(1);
    // One call past the limit with one in flight: within the target.
    expect(t.beyondTarget).toBe(0);
  });
});
