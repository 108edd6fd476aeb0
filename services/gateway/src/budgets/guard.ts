import type { Principal } from '../auth/resolver';
import { BATCH_ENDPOINT, figureCounts, rowCounts, usageCostCents } from '../billing/prices';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { SpendLedger } from '../limits/spend';
import type { BudgetRecord, SpendRow, UsageRow } from '../store';
import type { CallRecord } from '../call-log/record';
import { usageFigures } from '../usage/usage';
import type { BudgetBook } from './book';
import { periodOf, type Period } from './period';

const MICRO_PER_CENT = 10_000;

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
  /** Usage by model of a budget's scope over [from, to), from the rollups. */
  usage(b: BudgetRecord, from: Date, to: Date): Promise<SpendRow[]>;
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

  constructor(deps: GuardDeps) {
    this.#deps = deps;
  }

  admit(p: Principal): void | Promise<void> {
    const cap = p.key.limitMonthlySpendCents;
    if (cap != null) this.#caps.set(p.key.id, cap);
    else if (this.#caps.size > 0) this.#caps.delete(p.key.id);
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

  /** Charges a recorded call to the budgets it counts toward; announces thresholds it reached. */
  observe(r: CallRecord): void {
    if (!r.usage) return;
    const rules = this.#rules(r.accountId, r.keyId, r.memberId, this.#deps.book.cached(r.accountId) ?? []);
    if (rules.length === 0) return;
    const micro = callCostCents(r) * MICRO_PER_CENT;
    if (micro <= 0) return;
    const counters = new Map<string, { scope: string; period: Period; rules: BudgetRecord[] }>();
    for (const rule of rules) {
      const period = periodOf(rule.period, r.createdAt.getTime());
      const id = `${scopeOf(rule)}:${period.label}`;
      const c = counters.get(id) ?? { scope: scopeOf(rule), period, rules: [] };
      c.rules.push(rule);
      counters.set(id, c);
    }
    for (const c of counters.values()) {
      const total = this.#deps.ledger.add(c.scope, c.period.label, micro);
      const announce = (t: number | null) =>
        t !== null && c.rules.forEach((rule) => this.#crossed(rule, c.period, t));
      if (total instanceof Promise) {
        const charge = total.then(announce).finally(() => this.#charging.delete(charge));
        this.#charging.add(charge);
      } else announce(total);
    }
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
    const out = budgets.filter(
      (b) => b.scope === 'account' || (b.scope === 'user' ? b.targetId === memberId : b.targetId === keyId),
    );
    const cap = keyId ? this.#caps.get(keyId) : undefined;
    if (keyId && cap !== undefined) out.push(capBudget(accountId, keyId, cap));
    return out;
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
      (sum, row) => sum + usageCostCents(row.model, rowCounts(row as UsageRow)) * MICRO_PER_CENT,
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
    thresholds: [],
    period: 'monthly',
    createdBy: null,
    createdAt: new Date(0),
  };
}

/** A call's cost in USD cents at list prices. */
export function callCostCents(r: Pick<CallRecord, 'model' | 'usage'> & { endpoint?: string }): number {
  return usageCostCents(r.model, figureCounts(usageFigures(r.usage)), {
    batch: r.endpoint === BATCH_ENDPOINT,
  });
}

const SCOPE_WORDS = { account: "account's", user: "member's", api_key: "key's" } as const;
const usd = (cents: number) => `$${(cents / 100).toFixed(2)}`;
const utc = (t: number) => new Date(t).toISOString().replace(/\.000Z$/, 'Z');

/** 429 without retry-after: retrying cannot help before the period ends, so the SDKs are told not to. */
function refusal(rule: BudgetRecord, period: Period, micro: number): GatewayError {
  const message = rule.id.startsWith('cap:')
    ? `This key reached its monthly spend cap of ${usd(rule.limitCents)}. It resets at the start of next month (UTC); an account admin can raise the cap.`
    : `This ${SCOPE_WORDS[rule.scope]} ${rule.period} budget '${rule.name}' of ${usd(rule.limitCents)} is used up (${usd(micro / MICRO_PER_CENT)} spent since ${utc(period.start)}). It resets at ${utc(period.end)}; an account admin can raise it.`;
  return new GatewayError('rate_limit_error', message, { headers: { 'x-should-retry': 'false' } });
}
