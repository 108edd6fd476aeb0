import type { BudgetRecord } from './budget-queries';
import { GatewayError } from '../lib/errors';
import type { Period } from './period';

export const MICRO_PER_CENT = 10_000;

const SCOPE_WORDS = { account: "account's", user: "member's", api_key: "key's" } as const;
const usd = (cents: number) => `$${(cents / 100).toFixed(2)}`;
const utc = (t: number) => new Date(t).toISOString().replace(/\.000Z$/, 'Z');

/** The rule as a refusal names it. */
function ruleName(rule: BudgetRecord): string {
  if (rule.id.startsWith('spl_'))
    return `${rule.name} ${rule.period} spend limit of ${usd(rule.limitCents)} (${rule.id})`;
  if (rule.id.startsWith('cap:')) return `this key's monthly spend cap of ${usd(rule.limitCents)}`;
  return `the ${SCOPE_WORDS[rule.scope]} ${rule.period} budget '${rule.name}' of ${usd(rule.limitCents)} (${rule.id})`;
}

/** Who can change the rule, and where. */
function whoChanges(rule: BudgetRecord): string {
  return rule.id.startsWith('spl_')
    ? "An admin of this account can raise it (the dashboard's Spend limits page, or POST /v1/organizations/spend_limits)."
    : rule.id.startsWith('cap:')
      ? "An admin of this account can raise it (the key's limits.monthly_spend_cap_cents)."
      : "An admin of this account can raise it (the dashboard's Budgets page).";
}

/**
 * A call refused over money: a spend limit, a budget's hard cap, a key's spend cap. One answer
 * for all of them: billing_error with the status the provider's gateway answers a developer past
 * their spend limit, 429 (https://code.claude.com/docs/en/claude-apps-gateway-spend-limits, read
 * 2026-11-29), and `x-should-retry: false`, so the SDKs (Claude Code among them) do not retry
 * what waiting does not cure; it names the rule, what is spent and left, when it resets and who
 * can change it.
 */
function moneyRefusal(rule: BudgetRecord, message: string): GatewayError {
  const reason = rule.id.startsWith('spl_')
    ? `spend_limit:${rule.id}`
    : rule.id.startsWith('cap:')
      ? 'key_spend_cap'
      : `budget:${rule.id}`;
  return new GatewayError('billing_error', message, {
    status: 429,
    reason,
    headers: { 'x-should-retry': 'false' },
  });
}

/** The call's expected cost (`micro`) does not fit in what is left of a hard cap, with the calls in flight. */
export function holdRefusal(
  rule: BudgetRecord,
  period: Period,
  held: { micro: number; ceiling: boolean; what: string },
  leftMicro: number,
  spentMicro: number,
): GatewayError {
  const { micro, what } = held;
  const strict = held.ceiling ? 'may cost up to' : 'is expected to cost about';
  return moneyRefusal(
    rule,
    `This call ${strict} ${usd(Math.ceil(micro / MICRO_PER_CENT))} (${what}), more than the ${usd(Math.floor(leftMicro / MICRO_PER_CENT))} left of ${ruleName(rule)}: ${usd(spentMicro / MICRO_PER_CENT)} is spent or held by calls in flight since ${utc(period.start)}. It resets at ${utc(period.end)}. ${whoChanges(rule)}`,
  );
}

/** The cap is reached: nothing is left before the period ends. */
export function refusal(rule: BudgetRecord, period: Period, micro: number): GatewayError {
  return moneyRefusal(
    rule,
    `You reached ${ruleName(rule)}: ${usd(micro / MICRO_PER_CENT)} spent since ${utc(period.start)}, ${usd(Math.max(0, rule.limitCents - micro / MICRO_PER_CENT))} left. It resets at ${utc(period.end)}. ${whoChanges(rule)}`,
  );
}
