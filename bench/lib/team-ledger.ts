/**
 * What the call log says about a team's spend limits: where each member's first refusal came, and
 * how far the calls in flight carried the spend past the limit. Pure, over rows read from the
 * database (bench/claude-code-team.ts), so the figures are the gateway's own records, not the client's.
 */
export interface LedgerCall {
  memberId: string;
  status: number;
  /** The rule that refused the call (`spend_limit:…`, `rate_limit:…`, …), null when served or failed. */
  refusal: string | null;
  /** When the call started and ended, ms since the epoch. */
  startMs: number;
  endMs: number;
  /** What it cost, USD (0 for a refusal). */
  usd: number;
  /** Input tokens as the provider's rate limits count them (uncached input and cache writes). */
  inputTokens: number;
  outputTokens: number;
}

export interface MemberLimit {
  memberId: string;
  limitUsd: number;
  /** Spent this period before the run (a month under way). */
  seededUsd: number;
  /** The member's key's per-minute limits (null: none). */
  rpm: number | null;
  itpm: number | null;
  otpm: number | null;
}

export interface MemberOutcome {
  memberId: string;
  limitUsd: number;
  spentUsd: number;
  /** Spend when the first refusal came, as a share of the limit (null: never refused). */
  firstRefusalAt: number | null;
  refusals: number;
  /** Refusals that came while less than 95% of the limit that refused them was used. */
  early: number;
  /** Of the refusals, those made by a rate limit. */
  rateRefusals: number;
  overshootUsd: number;
  /** Calls that ended with the spend already past the limit (the one that crossed it included). */
  overshootCalls: number;
  /** The member's calls in flight when the limit was crossed (the crossing call included). */
  streamsAtCrossing: number;
}

/** Spend counts a call when it ends (that is when the gateway settles it). */
function spentBefore(served: LedgerCall[], seeded: number, t: number): number {
  let usd = seeded;
  for (const c of served) if (c.endMs <= t) usd += c.usd;
  return usd;
}

/** The share of the refusing rate limit that the key's calls used in the minute before the refusal. */
export function rateShare(limit: MemberLimit, served: LedgerCall[], refused: LedgerCall): number {
  const kind = refused.refusal!.slice('rate_limit:'.length);
  const window = served.filter((c) => c.startMs < refused.startMs && c.startMs >= refused.startMs - 60_000);
  const sum = (f: (c: LedgerCall) => number) => window.reduce((n, c) => n + f(c), 0);
  const [used, of] =
    kind === 'requests'
      ? [window.length, limit.rpm]
      : kind === 'input_tokens'
        ? [sum((c) => c.inputTokens), limit.itpm]
        : kind === 'output_tokens'
          ? [sum((c) => c.outputTokens), limit.otpm]
          : [0, null];
  return of ? used / of : 0;
}

export function memberOutcome(limit: MemberLimit, calls: LedgerCall[], threshold = 0.95): MemberOutcome {
  const served = calls.filter((c) => c.status < 400).sort((a, b) => a.endMs - b.endMs);
  const refused = calls.filter((c) => c.refusal !== null).sort((a, b) => a.startMs - b.startMs);
  const spendShares = refused
    .filter((r) => !r.refusal!.startsWith('rate_limit:'))
    .map((r) => spentBefore(served, limit.seededUsd, r.startMs) / limit.limitUsd);
  const rateShares = refused
    .filter((r) => r.refusal!.startsWith('rate_limit:'))
    .map((r) => rateShare(limit, served, r));
  let running = limit.seededUsd;
  let crossing: LedgerCall | null = null;
  let overshootCalls = 0;
  for (const c of served) {
    running += c.usd;
    if (running > limit.limitUsd) {
      crossing ??= c;
      overshootCalls++;
    }
  }
  const streamsAtCrossing = crossing
    ? served.filter((c) => c.startMs <= crossing.endMs && c.endMs >= crossing.endMs).length
    : 0;
  return {
    memberId: limit.memberId,
    limitUsd: limit.limitUsd,
    spentUsd: running,
    firstRefusalAt: spendShares[0] ?? null,
    refusals: refused.length,
    early: [...spendShares, ...rateShares].filter((s) => s < threshold).length,
    rateRefusals: rateShares.length,
    overshootUsd: Math.max(0, running - limit.limitUsd),
    overshootCalls,
    streamsAtCrossing,
  };
}

/** The team's figures: early refusals in all, and the member whose spend went furthest past its limit. */
export function teamOutcome(outcomes: MemberOutcome[]) {
  const byUsd = [...outcomes].sort((a, b) => b.overshootUsd - a.overshootUsd);
  const byCalls = [...outcomes].sort(
    (a, b) => b.overshootCalls - b.streamsAtCrossing - (a.overshootCalls - a.streamsAtCrossing),
  );
  const shares = outcomes.map((o) => o.firstRefusalAt).filter((s): s is number => s !== null);
  return {
    members: outcomes.length,
    reachedLimit: outcomes.filter((o) => o.spentUsd >= o.limitUsd * 0.95).length,
    refused: outcomes.filter((o) => o.refusals > 0).length,
    early: outcomes.reduce((n, o) => n + o.early, 0),
    rateRefusals: outcomes.reduce((n, o) => n + o.rateRefusals, 0),
    lowestFirstRefusal: shares.length ? Math.min(...shares) : null,
    worstUsd: byUsd[0] ?? null,
    /** The member with the most calls past the limit beyond its streams in flight. */
    worstCalls: byCalls[0] ?? null,
    beyondTarget: outcomes.filter((o) => o.overshootCalls > o.streamsAtCrossing).length,
  };
}
