import type { Principal } from '../auth/resolver';
import type { BudgetGuard } from '../budgets/guard';
import type { CallRecord } from '../lib/call-record';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { Prices } from '../pricing/prices';
import type { HeldCounter } from '../budgets/spend';
import { batchCeilingMicroUsd, ceilingMicroUsd, expectedMicroUsd, type CallSize } from './ceiling';
import type { CallEstimates } from './estimate';
import type { RateLimits } from './rates';
import type { LimitSubject, RateSubjects } from './subjects';

/**
 * What admission decides: null to let the call through, else the refusal to answer with
 * (402 billing_error for the account's standing, 429 rate_limit_error for limits and budgets).
 */
export type Verdict = GatewayError | null;

/** The account's billing standing: throws the 402 when its calls are paused. */
export interface Standing {
  admit(principal: Principal): void;
}

export interface AdmissionDeps {
  standing: Standing | null;
  rates: RateLimits;
  /** The rate limits each call is under: its key's, its member's, its groups' and its account's. */
  subjects: RateSubjects;
  /** What a call is expected to use, from the key's recent calls on the model. */
  estimates: CallEstimates;
  /** Budgets and the key's monthly spend cap. */
  budgets: BudgetGuard;
  /** The gateway's prices: a reservation's expected cost and ceiling. */
  prices: Prices;
  clock: () => number;
  logger: Logger;
  /** How long a reservation is held at most: the longest a call can run (the upstream timeout), with a margin. */
  holdMs: number;
}

/**
 * Who may call a model, in order: the account's billing standing, the rate limits of the key, its
 * member, the member's groups and the account (all must have room), then
 * the budgets (the key's monthly spend cap among them). `admit` runs on the headers, before
 * the body is read: a paused account or an exhausted limit costs no body. `reserve` runs once
 * the body is validated: a key under token limits or a hard-capped budget holds what the call
 * is expected to use (estimate.ts: its input from the body's size and the key's cached prefix,
 * its output from the key's recent calls, bounded by `max_tokens`; a budget may ask for the
 * ceiling instead) until `settle` sees the call's record and charges what it really used. So
 * calls admitted together overshoot a cap by at most what they cost beyond their holds.
 *
 * Keys without limits in accounts without budgets cost a few map lookups and no allocation.
 */
export class Admission {
  readonly #deps: AdmissionDeps;

  constructor(deps: AdmissionDeps) {
    this.#deps = deps;
  }

  /** Before the body: standing, rate limits, budgets. Only model calls are limited. */
  admit(principal: Principal, endpoint: string): Verdict | Promise<Verdict> {
    try {
      this.#deps.standing?.admit(principal);
    } catch (refused) {
      return verdictOf(refused);
    }
    if (endpoint !== 'messages') return null;
    const subjects = this.#deps.subjects.of(principal);
    return subjects instanceof Promise
      ? subjects.then((s) => this.#limited(principal, s), verdictOf)
      : this.#limited(principal, subjects);
  }

  #limited(principal: Principal, subjects: readonly LimitSubject[]): Verdict | Promise<Verdict> {
    if (subjects.length === 0) return this.#budgets(principal);
    let checked: void | Promise<void>;
    try {
      checked = this.#deps.rates.check(principal.key.id, subjects);
    } catch (refused) {
      return verdictOf(refused);
    }
    return checked instanceof Promise
      ? checked.then(() => this.#budgets(principal), verdictOf)
      : this.#budgets(principal);
  }

  #budgets(principal: Principal): Verdict | Promise<Verdict> {
    try {
      const checked = this.#deps.budgets.admit(principal);
      return checked instanceof Promise ? checked.then(admitted, verdictOf) : null;
    } catch (refused) {
      return verdictOf(refused);
    }
  }

  /**
   * After the body: the model policy of the key's account, groups, member and key. A call
   * outside it is refused before the provider with the provider's 400, naming the rule;
   * count_tokens (max_tokens 0) is held to the allow-list only.
   */
  permit(principal: Principal, body: { model: string; maxTokens: number }): Verdict {
    const refused = principal.policy?.check(body.model, body.maxTokens > 0 ? body.maxTokens : null);
    return refused ? new GatewayError('invalid_request_error', refused, { reason: 'model_policy' }) : null;
  }

  /**
   * After the body: holds what the call is expected to use where a limit needs it (nothing
   * otherwise). `headers` receives the provider's rate-limit headers of the key's limits, for
   * the answer.
   */
  reserve(
    principal: Principal,
    callId: string,
    size: CallSize,
    headers?: Record<string, string>,
  ): Verdict | Promise<Verdict> {
    const capped = this.#deps.budgets.capped(principal);
    const subjects = this.#deps.subjects.of(principal);
    const go = (s: readonly LimitSubject[]): Verdict | Promise<Verdict> => {
      if (s.length === 0 && !capped) return null;
      try {
        const out = this.#reserve(principal, s, callId, size, capped, headers);
        return out instanceof Promise ? out.catch(verdictOf) : out;
      } catch (refused) {
        return verdictOf(refused);
      }
    };
    return subjects instanceof Promise ? subjects.then(go, verdictOf) : go(subjects);
  }

  /** Synchronous while the buckets are (in memory) and no budget needs a hold. */
  #reserve(
    principal: Principal,
    subjects: readonly LimitSubject[],
    callId: string,
    size: CallSize,
    capped: boolean,
    headers: Record<string, string> | undefined,
  ): Verdict | Promise<Verdict> {
    const estimate = this.#deps.estimates.estimate(principal.key.id, callId, size);
    const held = (limits: Record<string, string>): Verdict | Promise<Verdict> => {
      if (headers) Object.assign(headers, limits);
      if (!capped) return null;
      const until = this.#deps.clock() + this.#deps.holdMs;
      const what = `about ${estimate.inputTokens} uncached and ${estimate.cachedTokens} cached input tokens and ${estimate.outputTokens} output tokens at ${size.model}'s price`;
      const { catalog } = this.#deps.prices;
      // A refused call is recorded too: its record gives back the tokens held above.
      return this.#deps.budgets.reserve(
        principal,
        callId,
        {
          expected: expectedMicroUsd(catalog, size.model, estimate, size.cacheWrite),
          ceiling: ceilingMicroUsd(size, catalog),
        },
        until,
        what,
      );
    };
    const limits = this.#deps.rates.reserve(callId, subjects, estimate);
    return limits instanceof Promise ? limits.then(held) : held(limits);
  }

  /** Standing and budgets, without rate limits: before work billed as it is done (an agent session's turns). */
  async admitSpend(principal: Principal): Promise<Verdict> {
    try {
      this.#deps.standing?.admit(principal);
      await this.#deps.budgets.admit(principal);
      return null;
    } catch (refused) {
      return verdictOf(refused);
    }
  }

  /**
   * Before a message batch is created: the account's standing and the budgets as for a call,
   * then, under a hard cap, the batch's ceiling (every request's input and `max_tokens` at the
   * batch price) held until `releaseBatch`, on `untilMs` at the latest. Answers the refusal a
   * single call over the cap gets, or the counters held (to be kept with the batch: its results
   * may be recorded by another instance, after a restart).
   */
  async holdBatch(
    principal: Principal,
    holdId: string,
    requests: readonly CallSize[],
    untilMs: number,
  ): Promise<GatewayError | HeldCounter[]> {
    try {
      this.#deps.standing?.admit(principal);
      await this.#deps.budgets.admit(principal);
    } catch (refused) {
      return verdictOf(refused) ?? [];
    }
    if (!this.#deps.budgets.capped(principal)) return [];
    const what = `${requests.length} requests' max_tokens and input at the batch price`;
    return this.#deps.budgets
      .hold(principal, holdId, batchCeilingMicroUsd(requests, this.#deps.prices.catalog), untilMs, what)
      .catch((refused) => verdictOf(refused) ?? []);
  }

  /**
   * Gives back a batch's hold once its results are recorded: after the calls recorded so far
   * are charged, so the cap never shows the batch as neither held nor spent.
   */
  async releaseBatch(holdId: string, counters: readonly HeldCounter[]): Promise<void> {
    await this.settled();
    await this.#deps.budgets.release(holdId, counters);
  }

  /** Where a finished call's record goes first: its holds settle at what it really used (nothing, if it failed). */
  settle(record: CallRecord): void {
    this.#deps.rates.settle(record);
    this.#deps.budgets.observe(record);
    this.#deps.estimates.observe(record);
  }

  /** Resolves once every recorded call has been charged to the shared counters. */
  settled(): Promise<void> {
    return this.#deps.budgets.settled();
  }
}

const admitted = (): Verdict => null;

function verdictOf(refused: unknown): Verdict {
  if (refused instanceof GatewayError) return refused;
  throw refused;
}
