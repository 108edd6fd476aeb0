import { periodOf } from '../budgets/period';
import type { Backend, Json } from './backend';
import { enc, shortDate } from './command';
import { listAll } from './lookup';
import { scopeText, type Subject, usd } from './subject';

/** One control that applies to a subject, as `keygate limit list` shows it. */
export interface ControlRow {
  rule: 'spend_limit' | 'budget' | 'rate_limit' | 'spend_cap';
  /** Whose rule it is: the subject's own, or one it inherits (its group's, its account's, its member's). */
  set_on: string;
  period: string | null;
  limit: string;
  spent: string | null;
  left: string | null;
  resets: string | null;
  hold: string | null;
  id: string | null;
}

const RATE_FIELDS = [
  ['requests_per_minute', 'rpm'],
  ['input_tokens_per_minute', 'itpm'],
  ['output_tokens_per_minute', 'otpm'],
  ['tokens_per_minute', 'tpm'],
] as const;

/** A key's rate limits and monthly spend cap (set with the key, held on the key alone). */
function keyRows(k: Json): ControlRow[] {
  const rows: ControlRow[] = [];
  for (const [field, word] of RATE_FIELDS) {
    const v = k.limits?.[field];
    if (v == null) continue;
    rows.push({
      rule: 'rate_limit',
      set_on: `key ${k.id}`,
      period: 'minute',
      limit: `${v} ${word}`,
      spent: null,
      left: null,
      resets: null,
      hold: null,
      id: k.id,
    });
  }
  const cap = k.limits?.monthly_spend_cap_cents;
  if (cap != null)
    rows.push({
      rule: 'spend_cap',
      set_on: `key ${k.id}`,
      period: 'monthly',
      limit: usd(cap),
      spent: null,
      left: null,
      resets: shortDate(new Date(periodOf('monthly', Date.now()).end).toISOString()),
      hold: 'expected',
      id: k.id,
    });
  return rows;
}

const WORD = Object.fromEntries(RATE_FIELDS) as Record<string, string>;

/** A member's, group's or the account's rate-limit entry (or the plan's member default), one row per kind. */
function scopeRateRows(e: Json): ControlRow[] {
  const setOn = e.source === 'plan' ? "plan's member default" : scopeText(e.scope);
  return e.limits.map((l: Json) => ({
    rule: 'rate_limit',
    set_on: setOn,
    period: 'minute',
    limit: `${l.value} ${WORD[l.type] ?? l.type}`,
    spent: null,
    left: null,
    resets: null,
    hold: null,
    id: e.id,
  }));
}

/** The rate-limit entries of members, groups and the account that apply to the subject. */
async function scopeRates(backend: Backend, s: Subject): Promise<ControlRow[]> {
  const entries = (await listAll(backend, `${s.path}/rate_limits`)).filter((e) => e.scope.type !== 'api_key');
  const memberId = s.kind === 'member' ? s.id : s.kind === 'key' ? s.key.member_id : null;
  const own = memberId
    ? entries.find((e) => e.scope.type === 'user' && e.scope.user_id === memberId)
    : undefined;
  const applies = (e: Json) =>
    s.kind === 'account' ||
    e.scope.type === 'organization' ||
    (s.kind === 'group' && e.scope.type === 'rbac_group' && e.scope.rbac_group_id === s.id) ||
    (memberId != null && e === (own ?? entries.find((x) => x.source === 'plan')));
  return entries.filter(applies).flatMap(scopeRateRows);
}

const resetsOf = (period: string) =>
  shortDate(new Date(periodOf(period as 'monthly', Date.now()).end).toISOString());

function spendLimitRow(l: Json, spent: number | null = null): ControlRow {
  const amount = l.amount === null ? null : Number(l.amount);
  return {
    rule: 'spend_limit',
    set_on: scopeText(l.scope),
    period: l.period,
    limit: amount === null ? 'no limit' : usd(amount),
    spent: spent === null ? null : usd(spent),
    left: spent === null || amount === null ? null : usd(Math.max(0, amount - spent)),
    resets: resetsOf(l.period),
    hold: l.hold ?? 'expected',
    id: l.id,
  };
}

function budgetRow(b: Json): ControlRow {
  const p = b.progress;
  return {
    rule: 'budget',
    set_on: b.scope === 'account' ? 'account' : `${b.scope === 'user' ? 'member' : 'key'} ${b.target_id}`,
    period: b.period,
    limit: `${usd(b.limit_cents)}${b.hard_cap ? '' : ' (alerts only)'}`,
    spent: usd(p.spent_cents),
    left: usd(Math.max(0, p.limit_cents - p.spent_cents)),
    resets: shortDate(p.period_end),
    hold: b.hard_cap ? (b.hold ?? 'expected') : null,
    id: b.id,
  };
}

/** A member's effective spend limits (the one that binds, per period, with its source), and spend. */
async function memberSpendRows(backend: Backend, path: string, memberId: string): Promise<ControlRow[]> {
  const [limits, effective] = await Promise.all([
    listAll(backend, `${path}/spend_limits`),
    backend.request('GET', `${path}/spend_limits/effective`, { query: { user_ids: [memberId] } }),
  ]);
  const byId = new Map(limits.map((l) => [l.id, l]));
  return effective.data.flatMap((e: Json) => {
    const l = byId.get(e.spend_limit_id);
    return l ? [spendLimitRow(l, Number(e.period_to_date_spend))] : [];
  });
}

/**
 * Every spend limit, budget, rate limit and key spend cap that applies to the subject: its own
 * and those it inherits (a member's groups' and account's spend limits, the account's budgets).
 */
export async function controlsOf(backend: Backend, s: Subject): Promise<ControlRow[]> {
  const budgets = (await listAll(backend, `${s.path}/budgets`)).filter(
    (b) =>
      b.scope === 'account' ||
      (s.kind === 'member' && b.scope === 'user' && b.target_id === s.id) ||
      (s.kind === 'key' &&
        ((b.scope === 'api_key' && b.target_id === s.id) ||
          (b.scope === 'user' && b.target_id === s.key.member_id))) ||
      (s.kind === 'account' && b.scope !== 'account'),
  );
  const rows: ControlRow[] = [];
  if (s.kind === 'account') {
    rows.push(...(await listAll(backend, `${s.path}/spend_limits`)).map((l) => spendLimitRow(l)));
    const keys = await listAll(backend, `${s.path}/api_keys`, { status: 'active' });
    rows.push(...keys.filter((k) => k.kind !== 'admin').flatMap(keyRows));
  } else if (s.kind === 'group') {
    const limits = await listAll(backend, `${s.path}/spend_limits`);
    rows.push(
      ...limits
        .filter(
          (l) =>
            l.scope.type === 'organization' ||
            (l.scope.type === 'rbac_group' && l.scope.rbac_group_id === s.id),
        )
        .map((l) => spendLimitRow(l)),
    );
  } else if (s.kind === 'member') {
    rows.push(...(await memberSpendRows(backend, s.path, s.id)));
    const keys = await listAll(backend, `${s.path}/api_keys`, { status: 'active', member_id: s.id });
    rows.push(...keys.flatMap(keyRows));
  } else {
    rows.push(...keyRows(s.key));
    if (s.key.member_id) rows.push(...(await memberSpendRows(backend, s.path, s.key.member_id)));
    else {
      const effective = await backend.request('GET', `${s.path}/spend_limits/effective`);
      const mine = effective.data.filter((e: Json) => e.actor?.scoped_api_key_id === s.id);
      const limits = await listAll(backend, `${s.path}/spend_limits`);
      for (const e of mine) {
        const l = limits.find((x) => x.id === e.spend_limit_id);
        if (l) rows.push(spendLimitRow(l, Number(e.period_to_date_spend)));
      }
    }
  }
  rows.push(...(await scopeRates(backend, s)));
  rows.push(...budgets.map(budgetRow));
  return rows;
}

/** The account API path of a key (for `limit set --key`). */
export const keyPath = (s: Subject & { kind: 'key' }) => `${s.path}/api_keys/${enc(s.id)}`;
