import type { BudgetRecord } from '../store';
import { GatewayError } from '../lib/errors';
import type { Period } from './period';

export const MICRO_PER_CENT = 10_000;

/** 429: the call's ceiling does not fit in what is left of a hard-capped budget (calls in flight hold part of it). */
export function holdRefusal(
  rule: BudgetRecord,
  micro: number,
  leftMicro: number,
  what: string,
): GatewayError {
  if (rule.id.startsWith('spl_'))
    return spendLimitRefusal(
      `This call may cost up to ${usd(Math.ceil(micro / MICRO_PER_CENT))} (${what}), more than the ${usd(Math.floor(leftMicro / MICRO_PER_CENT))} left of ${rule.name} ${rule.period} spend limit of ${usd(rule.limitCents)} (${rule.id}) with the calls in flight. Lower max_tokens, or ask an account admin for a higher limit.`,
    );
  const name = rule.id.startsWith('cap:')
    ? `this key's monthly spend cap of ${usd(rule.limitCents)}`
    : `the ${SCOPE_WORDS[rule.scope]} ${rule.period} budget '${rule.name}' of ${usd(rule.limitCents)}`;
  return new GatewayError(
    'rate_limit_error',
    `This call may cost up to ${usd(Math.ceil(micro / MICRO_PER_CENT))} (${what}), more than the ${usd(Math.floor(leftMicro / MICRO_PER_CENT))} left of ${name} with the calls in flight. Lower max_tokens, or retry when calls in flight finish; an account admin can raise the limit.`,
    { headers: { 'x-should-retry': 'false' } },
  );
}

const SCOPE_WORDS = { account: "account's", user: "member's", api_key: "key's" } as const;
const usd = (cents: number) => `$${(cents / 100).toFixed(2)}`;
const utc = (t: number) => new Date(t).toISOString().replace(/\.000Z$/, 'Z');

/** 429 without retry-after: retrying cannot help before the period ends, so the SDKs are told not to. */
export function refusal(rule: BudgetRecord, period: Period, micro: number): GatewayError {
  if (rule.id.startsWith('spl_'))
    return spendLimitRefusal(
      `You reached ${rule.name} ${rule.period} spend limit of ${usd(rule.limitCents)} (${rule.id}): ${usd(micro / MICRO_PER_CENT)} spent since ${utc(period.start)}. It resets at ${utc(period.end)}; ask an account admin for a higher limit (the dashboard's Spend limits page).`,
    );
  const message = rule.id.startsWith('cap:')
    ? `This key reached its monthly spend cap of ${usd(rule.limitCents)}. It resets at the start of next month (UTC); an account admin can raise the cap.`
    : `This ${SCOPE_WORDS[rule.scope]} ${rule.period} budget '${rule.name}' of ${usd(rule.limitCents)} is used up (${usd(micro / MICRO_PER_CENT)} spent since ${utc(period.start)}). It resets at ${utc(period.end)}; an account admin can raise it.`;
  return new GatewayError('rate_limit_error', message, { headers: { 'x-should-retry': 'false' } });
}

/**
 * Over a spend limit: 429 with a billing_error body, as the provider's gateway answers a
 * developer past their cap (https://code.claude.com/docs/en/claude-apps-gateway-spend-limits,
 * read 2026-11-25), and `x-should-retry: false` so the SDKs do not retry before the period ends.
 */
function spendLimitRefusal(message: string): GatewayError {
  return new GatewayError('billing_error', message, { status: 429, headers: { 'x-should-retry': 'false' } });
}
