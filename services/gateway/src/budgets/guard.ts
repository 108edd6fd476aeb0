import type { Principal } from '../auth/resolver';
import { figureCounts, figureDims, type Prices } from '../pricing/prices';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { HeldCounter, HoldItem, Reserved, SpendLedger } from './spend';
import type { BudgetRecord, SpendRow } from './budget-queries';
import type { SpendLimitRecord } from './spend-limit-queries';
import type { UsageRow } from '../call-log/usage-queries';
import { spendLimitRules, WARN_AT } from './spend-limits';
import type { CallRecord } from '../lib/call-record';
import { usageFigures } from '../usage/usage';
import type { BudgetBook } from './book';
import { periodOf, type Period } from './period';

import { holdRefusal, MICRO_PER_CENT, refusal } from './refusals';

/** What a call holds: what it is expected to cost, and its ceiling (for budgets with `hold: 'ceiling'`). */
export interface Hold {
  expected: number;
  ceiling: number;
}

/** A soft threshold reached: each fires once per budget, period and instance (the store makes it once overall). */
export interface Crossing {
  budget: BudgetRecord;
  threshold: number;
  period: Period;
  spentCents: number;
}

export interface GuardDeps {
  ledger: SpendLedger;
  book: BudgetBook;
  /** Each account's spend limits (the provider's face of hard caps), resolved per key at admission. */
  spendLimits?: BudgetBook<SpendLimitRecord>;
  /** Usage by model of a budget's scope over [from, to), from the rollups. */
  usage(b: BudgetRecord, from: Date, to: Date): Promise<SpendRow[]>;
  /** The gateway's prices: spend is each call's cost at them. */
  prices: Prices;
  clock: () => number;
  logger: Logger;
  onCrossing?(c: Crossing): void;
}

/**
 * Budgets at admission: per account, member and key, with the key's own monthly spend cap as
 * one more hard-capped budget. Spend comes from the ledger (seeded once per scope and period,
 * then counted from recorded calls); budgets from the book. An account without budgets and
 * a key without a cap cost a map lookup.
 */
export class BudgetGuard {
  readonly #deps: GuardDeps;
  /** Keys with a monthly spend cap, as last admitted: the cap is read from the key, not the book. */
  readonly #caps = new Map<string, number>();
  readonly #fired = new Set<string>();
  /** Charges still on their way to a shared ledger (Redis). */
  readonly #charging = new Set<Promise<unknown>>();
  /** Calls holding their ceiling on hard-capped counters, by call id: the counters held. */
  readonly #holds = new Map<string, readonly HoldItem[]>();
  /** Keys under spend limits, as last admitted: their limits resolved for their member and groups. */
  readonly #limited = new Map<string, readonly BudgetRecord[]>();
  /** The resolution per principal (a key's auth context) and the account's limits it was made from. */
  readonly #resolved = new WeakMap<Principal, { from: readonly SpendLimitRecord[]; rules: BudgetRecord[] }>();

  constructor(deps: GuardDeps) {
    this.#deps = deps;
  }

  admit(p: Principal): void | Promise<void> {
    // Test keys' calls cost nothing: no budget or spend limit counts them, or refuses them.
    if (p.key.kind === 'test') return;
    const cap = p.key.limitMonthlySpendCents;
    if (cap != null) this.#caps.set(p.key.id, cap);
    else if (this.#caps.size > 0) this.#caps.delete(p.key.id);
    const limits = this.#deps.spendLimits?.of(p.account.id);
    if (limits instanceof Promise)
      return limits.then(
        (l) => {
          this.#resolve(p, l);
          return this.#admitBudgets(p);
        },
        (error) => {
          this.#deps.logger.warn('spend limits unreadable; not enforced for this call', {
            accountId: p.account.id,
            error,
          });
          return this.#admitBudgets(p);
        },
      );
    if (limits) this.#resolve(p, limits);
    return this.#admitBudgets(p);
  }

  /** The key's spend limits for its member and groups, resolved once per auth context and limits read. */
  #resolve(p: Principal, limits: readonly SpendLimitRecord[]): void {
    if (limits.length === 0) {
      if (this.#limited.size > 0) this.#limited.delete(p.key.id);
      return;
    }
    let r = this.#resolved.get(p);
    if (r?.from !== limits) {
      r = {
        from: limits,
        rules: spendLimitRules(limits, p.account.id, p.key.id, p.key.memberId, p.groupIds),
      };
      this.#resolved.set(p, r);
    }
    if (r.rules.length > 0) this.#limited.set(p.key.id, r.rules);
    else if (this.#limited.size > 0) this.#limited.delete(p.key.id);
  }

  #admitBudgets(p: Principal): void | Promise<void> {
    const budgets = this.#deps.book.of(p.account.id);
    if (!(budgets instanceof Promise))
      return this.#check(this.#rules(p.account.id, p.key.id, p.key.memberId, budgets));
    return budgets.then(
      (b) => this.#check(this.#rules(p.account.id, p.key.id, p.key.memberId, b)),
      (error) =>
        this.#deps.logger.warn('budgets unreadable; not enforced for this call', {
          accountId: p.account.id,
          error,
        }),
    );
  }

  /** True when the key falls under a hard-capped budget (its own spend cap among them); the book is loaded by `admit`. */
  capped(p: Principal): boolean {
    if (p.key.kind === 'test') return false;
    if (p.key.limitMonthlySpendCents != null) return true;
    if (this.#limited.size > 0 && this.#limited.has(p.key.id)) return true;
    const budgets = this.#deps.book.cached(p.account.id);
    if (budgets === undefined) return false;
    for (const b of budgets) if (b.hardCap && this.#applies(b, p.key.id, p.key.memberId)) return true;
    return false;
  }

  /**
   * Holds what a call is expected to cost (micro-USD; `ceiling` on a budget that asks for the
   * strict hold) on every hard-capped budget the key falls under, all or none, until the call
   * is recorded (`observe`) or `untilMs`. Answers the refusal when one of them cannot take it;
   * `what` says what the hold is made of, for that refusal.
   */
  async reserve(
    p: Principal,
    callId: string,
    micro: Hold,
    untilMs: number,
    what: string,
  ): Promise<GatewayError | null> {
    const held = await this.#hold(p, callId, micro, untilMs, what);
    if (held instanceof GatewayError) return held;
    if (held.length > 0) this.#holds.set(callId, held);
    return null;
  }

  /**
   * Holds `micro` like `reserve`, for something recorded as many calls later, possibly by another
   * instance (a message batch): the counters held are answered, to be kept with it and given
   * back to `release` once its calls are charged. No hard cap: nothing held, an empty list.
   */
  async hold(
    p: Principal,
    holdId: string,
    micro: number,
    untilMs: number,
    what: string,
  ): Promise<GatewayError | HeldCounter[]> {
    const held = await this.#hold(p, holdId, micro, untilMs, what);
    if (held instanceof GatewayError) return held;
    return held.map((h) => ({ scopeId: h.scopeId, label: h.period.label }));
  }

  /** Drops a `hold`; what its calls cost was charged as each was recorded (`observe`). */
  async release(holdId: string, counters: readonly HeldCounter[]): Promise<void> {
    if (counters.length === 0) return;
    await this.#deps.ledger.settle(
      holdId,
      counters.map((c) => ({ scopeId: c.scopeId, label: c.label, microUsd: 0 })),
    );
  }

  async #hold(
    p: Principal,
    holdId: string,
    hold: number | Hold,
    untilMs: number,
    what: string,
  ): Promise<GatewayError | HoldItem[]> {
    const now = this.#deps.clock();
    const budgets = await this.#deps.book.of(p.account.id);
    const hard = this.#rules(p.account.id, p.key.id, p.key.memberId, budgets).filter((b) => b.hardCap);
    if (hard.length === 0) return [];
    // Budgets of one scope and period share a counter; the smallest limit on it binds.
    const byCounter = new Map<string, { item: HoldItem; rule: BudgetRecord }>();
    for (const rule of hard) {
      const period = periodOf(rule.period, now);
      const id = `${scopeOf(rule)}:${period.label}`;
      const limitMicro = rule.limitCents * MICRO_PER_CENT;
      const micro = typeof hold === 'number' ? hold : rule.hold === 'ceiling' ? hold.ceiling : hold.expected;
      const held = byCounter.get(id);
      // Rules on one counter: the smallest limit binds, and a strict rule's ceiling is held.
      if (!held || limitMicro < held.item.limitMicro || micro > held.item.microUsd)
        byCounter.set(id, {
          item: {
            scopeId: scopeOf(rule),
            period,
            microUsd: Math.max(micro, held?.item.microUsd ?? 0),
            limitMicro: Math.min(limitMicro, held?.item.limitMicro ?? limitMicro),
          },
          rule: !held || limitMicro < held.item.limitMicro ? rule : held.rule,
        });
    }
    const entries = [...byCounter.values()];
    const items = entries.map((e) => e.item);
    let r: Reserved = await this.#deps.ledger.reserve(holdId, items, untilMs, now);
    if (r.unseeded) {
      await Promise.all(entries.map((e) => this.#spent(e.rule, e.item.period)));
      r = await this.#deps.ledger.reserve(holdId, items, untilMs, now);
    }
    if (r.refused === -1) return items;
    const e = entries[r.refused]!;
    const period = e.item.period;
    const spent = e.item.limitMicro - r.leftMicro;
    const ceiling = typeof hold === 'number' || e.rule.hold === 'ceiling';
    return holdRefusal(e.rule, period, { micro: e.item.microUsd, ceiling, what }, r.leftMicro, spent);
  }

  /** Charges a recorded call to the budgets it counts toward (settling what it held); announces thresholds it reached. */
  observe(r: CallRecord): void {
    if (r.test) return;
    const held = this.#holds.size > 0 ? this.#holds.get(r.id) : undefined;
    if (held) this.#holds.delete(r.id);
    if (!r.usage && !held) return;
    const rules = this.#rules(r.accountId, r.keyId, r.memberId, this.#deps.book.cached(r.accountId) ?? []);
    if (rules.length === 0 && !held) return;
    const micro = r.usage ? callCostCents(this.#deps.prices, r) * MICRO_PER_CENT : 0;
    if (micro <= 0 && !held) return;
    const counters = new Map<string, { scope: string; period: Period; rules: BudgetRecord[] }>();
    for (const rule of rules) {
      const period = periodOf(rule.period, r.createdAt.getTime());
      const id = `${scopeOf(rule)}:${period.label}`;
      const c = counters.get(id) ?? { scope: scopeOf(rule), period, rules: [] };
      c.rules.push(rule);
      counters.set(id, c);
    }
    if (held) {
      // Held counters settle together: the hold goes, the real cost (0 for a failed call) comes.
      const settled = held.map((h) => ({ scopeId: h.scopeId, label: h.period.label, microUsd: micro }));
      // Taken now: the counters are dropped from the map below, before a shared ledger answers.
      const mine = held.map((h) => counters.get(`${h.scopeId}:${h.period.label}`));
      const announce = (totals: (number | null)[]) =>
        mine.forEach((c, i) => {
          const t = totals[i];
          if (t != null && c) for (const rule of c.rules) this.#crossed(rule, c.period, t);
        });
      this.#track(this.#deps.ledger.settle(r.id, settled), announce);
      for (const h of held) counters.delete(`${h.scopeId}:${h.period.label}`);
    }
    if (micro <= 0) return;
    for (const c of counters.values()) {
      const announce = (t: number | null) =>
        t !== null && c.rules.forEach((rule) => this.#crossed(rule, c.period, t));
      this.#track(this.#deps.ledger.add(c.scope, c.period.label, micro), announce);
    }
  }

  #track<T>(value: T | Promise<T>, then: (v: T) => unknown): void {
    if (!(value instanceof Promise)) {
      then(value);
      return;
    }
    const charge = value
      .then(then, (error) => this.#deps.logger.warn('charging a call to its budgets failed', { error }))
      .finally(() => this.#charging.delete(charge));
    this.#charging.add(charge);
  }

  /** Resolves once every charge made so far has reached the ledger (tests, shutdown). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#charging]);
  }

  #rules(
    accountId: string,
    keyId: string | null,
    memberId: string | null,
    budgets: readonly BudgetRecord[],
  ): BudgetRecord[] {
    const out = budgets.filter((b) => this.#applies(b, keyId, memberId));
    const cap = keyId ? this.#caps.get(keyId) : undefined;
    if (keyId && cap !== undefined) out.push(capBudget(accountId, keyId, cap));
    const limited = keyId && this.#limited.size > 0 ? this.#limited.get(keyId) : undefined;
    if (limited) out.push(...limited);
    return out;
  }

  #applies(b: BudgetRecord, keyId: string | null, memberId: string | null): boolean {
    return b.scope === 'account' || (b.scope === 'user' ? b.targetId === memberId : b.targetId === keyId);
  }

  #check(rules: BudgetRecord[]): void | Promise<void> {
    if (rules.length === 0) return;
    const now = this.#deps.clock();
    const figures = rules.map((rule) => this.#spent(rule, periodOf(rule.period, now)));
    if (figures.every((f) => typeof f === 'number')) {
      try {
        return this.#enforce(rules, figures as number[], now);
      } catch (refused) {
        // Admission answers refusals as rejections, whatever path found them.
        return Promise.reject(refused);
      }
    }
    return Promise.all(figures).then((f) => this.#enforce(rules, f, now));
  }

  #spent(rule: BudgetRecord, period: Period): number | Promise<number> {
    const failed = (error: unknown) => {
      // The ledger's own refusal (its store is down and limits fail closed) stands.
      if (error instanceof GatewayError) throw error;
      this.#deps.logger.warn('spend seed failed; budget not enforced for this call', {
        budgetId: rule.id,
        error,
      });
      return 0;
    };
    try {
      const v = this.#deps.ledger.spent(scopeOf(rule), period, () => this.#seed(rule, period), rule.hardCap);
      return v instanceof Promise ? v.catch(failed) : v;
    } catch (error) {
      return Promise.reject(error).catch(failed);
    }
  }

  async #seed(rule: BudgetRecord, period: Period): Promise<number> {
    const rows = await this.#deps.usage(rule, new Date(period.start), new Date(period.end));
    return rows.reduce(
      (sum, row) => sum + this.#deps.prices.rowCost(row as UsageRow).cents * MICRO_PER_CENT,
      0,
    );
  }

  #enforce(rules: BudgetRecord[], figures: number[], now: number): void {
    rules.forEach((rule, i) => this.#crossed(rule, periodOf(rule.period, now), figures[i]!));
    const i = rules.findIndex((rule, i) => rule.hardCap && figures[i]! >= rule.limitCents * MICRO_PER_CENT);
    if (i >= 0) throw refusal(rules[i]!, periodOf(rules[i]!.period, now), figures[i]!);
  }

  #crossed(rule: BudgetRecord, period: Period, micro: number): void {
    if (!this.#deps.onCrossing || rule.thresholds.length === 0 || micro <= 0) return;
    const percent = (micro / (rule.limitCents * MICRO_PER_CENT)) * 100;
    for (const threshold of rule.thresholds) {
      if (percent < threshold) break;
      const id = `${rule.id}:${period.label}:${threshold}`;
      if (this.#fired.has(id)) continue;
      // The store keeps each crossing once; this set only spares it repeated writes.
      if (this.#fired.size >= 100_000) this.#fired.clear();
      this.#fired.add(id);
      this.#deps.onCrossing({ budget: rule, threshold, period, spentCents: micro / MICRO_PER_CENT });
    }
  }
}

/** The id the ledger counts a budget's spend under: its key, member or account. */
const scopeOf = (b: BudgetRecord) => b.targetId ?? b.accountId;

/** A key's monthly spend cap (`limits.monthly_spend_cap_cents`) as a budget. */
function capBudget(accountId: string, keyId: string, capCents: number): BudgetRecord {
  return {
    id: `cap:${keyId}`,
    accountId,
    scope: 'api_key',
    targetId: keyId,
    name: 'monthly spend cap',
    limitCents: capCents,
    hardCap: true,
    // It warns as spend limits do (alerts/monitors.ts sends both the same way).
    thresholds: [...WARN_AT],
    period: 'monthly',
    createdBy: null,
    createdAt: new Date(0),
  };
}

/** A call's cost in USD cents at list prices. */
export function callCostCents(
  prices: Prices,
  r: Pick<CallRecord, 'model' | 'usage' | 'createdAt' | 'batch'>,
): number {
  const u = usageFigures(r.usage, r.batch);
  return prices.callCost(r.model, figureCounts(u), figureDims(u, r.createdAt)).cents;
}
