import { effectiveReport } from '../budgets/effective';
import { periodOf } from '../budgets/period';
import { listBudgets } from '../budgets/service';
import type { KeyRecord } from '../tenancy/key-queries';
import type { AccountStore } from '../accounts/service';
import type { DashboardDeps } from './env';

/** Whose page the section is on. */
export type ControlSubject =
  | { kind: 'account' }
  | { kind: 'member'; id: string }
  | { kind: 'group'; id: string }
  | { kind: 'key'; key: KeyRecord };

/** One spend limit, budget, rate limit or model policy that applies to the subject. */
export interface ControlRow {
  rule: 'Spend limit' | 'Budget' | 'Rate limit' | 'Key spend cap' | 'Model policy';
  /** Where it is set: 'this member', 'group Contractors', 'the account', … */
  setOn: string;
  /** Whether the subject's own (removable here) or inherited. */
  own: boolean;
  limit: string;
  period: string | null;
  spentCents: number | null;
  leftCents: number | null;
  resets: Date | null;
  setBy: string | null;
  setAt: Date | null;
  /** What a remove form posts: the spend limit's id, or the rate field. */
  removeId: string | null;
}

const usd = (cents: number) => `$${(cents / 100).toFixed(2)}`;

/** Who made the last change to a rule, from the audit log: an admin's email, else the actor. */
async function setBy(store: AccountStore, accountId: string, targetId: string, actions: string[]) {
  const page = await store.audit.list(accountId, { targetId }, { limit: 20 });
  const last = page.rows.find((r) => actions.includes(r.action));
  if (!last) return { setBy: null, setAt: null };
  let who = last.actor;
  if (who.startsWith('key_')) {
    const k = await store.keys.get(accountId, who);
    const m = k?.memberId ? await store.members.get(accountId, k.memberId) : null;
    if (m) who = m.email;
  }
  return { setBy: who, setAt: last.createdAt };
}

const RATE_FIELDS = [
  ['limitRpm', 'requests a minute', 'rpm'],
  ['limitItpm', 'input tokens a minute', 'itpm'],
  ['limitOtpm', 'output tokens a minute', 'otpm'],
  ['limitTpm', 'tokens a minute', 'tpm'],
] as const;

/** One row per rate limit set, each removable by its flag. */
function rateRows(
  limitOf: (field: (typeof RATE_FIELDS)[number][0]) => number | null,
  setOn: string,
  own: boolean,
  who: { setBy: string | null; setAt: Date | null },
): ControlRow[] {
  return RATE_FIELDS.flatMap(([field, words, flag]) => {
    const v = limitOf(field);
    if (v == null) return [];
    return [
      {
        rule: 'Rate limit' as const,
        setOn,
        own,
        limit: `${v.toLocaleString('en-US')} ${words}`,
        period: 'minute',
        spentCents: null,
        leftCents: null,
        resets: null,
        ...who,
        removeId: flag,
      },
    ];
  });
}

async function keyRows(deps: DashboardDeps, k: KeyRecord, own: boolean): Promise<ControlRow[]> {
  const who = await setBy(deps.store, k.accountId, k.id, ['api_key.update', 'api_key.create']);
  const rows: ControlRow[] = [];
  const setOn = own ? 'this key' : `key ${k.name} (${k.hint})`;
  rows.push(...rateRows((field) => k[field], setOn, own, who));
  if (k.limitMonthlySpendCents != null)
    rows.push({
      rule: 'Key spend cap',
      setOn: own ? 'this key' : `key ${k.name} (${k.hint})`,
      own,
      limit: usd(k.limitMonthlySpendCents),
      period: 'monthly',
      spentCents: null,
      leftCents: null,
      resets: new Date(periodOf('monthly', deps.clock()).end),
      ...who,
      removeId: null,
    });
  return rows;
}

/** The member's, groups' and account's rate limits that apply (a member's own, else the plan's default). */
async function scopeRateRows(
  deps: DashboardDeps,
  accountId: string,
  s: ControlSubject,
  ctx: { memberId: string | null; myGroups: string[]; where: (scopeId: string, type: string) => string },
): Promise<ControlRow[]> {
  const all = await deps.store.rateLimits.ofAccount(accountId);
  const own = ctx.memberId
    ? all.find((r) => r.scopeType === 'user' && r.scopeId === ctx.memberId)
    : undefined;
  const rows: ControlRow[] = [];
  for (const r of all) {
    const applies =
      s.kind === 'account' ||
      r.scopeType === 'organization' ||
      (r.scopeType === 'rbac_group' && ctx.myGroups.includes(r.scopeId)) ||
      (ctx.memberId != null && r === (own ?? all.find((x) => x.source === 'plan')));
    if (!applies) continue;
    const plan = r.source === 'plan';
    const mine =
      !plan &&
      (s.kind === 'account'
        ? r.scopeType === 'organization'
        : r.scopeId === ctx.memberId || (s.kind === 'group' && r.scopeId === s.id));
    const who = plan
      ? { setBy: "the plan's default for each member", setAt: null }
      : await setBy(deps.store, accountId, r.id, ['rate_limit.set']);
    const setOn = plan
      ? 'the plan (each member)'
      : s.kind === 'account' && r.scopeType !== 'organization'
        ? `${r.scopeType} ${r.scopeId}`
        : ctx.where(r.scopeId, r.scopeType);
    const values = { limitRpm: r.rpm, limitItpm: r.itpm, limitOtpm: r.otpm, limitTpm: null };
    rows.push(...rateRows((field) => values[field], setOn, mine, who));
  }
  return rows;
}

/**
 * Every control that applies to the subject, its own and inherited: spend limits (with the
 * member's spend this period when it is a member's), budgets with their progress, keys' rate
 * limits and spend caps, and model policies; each with who last set it.
 */
export async function controlsFor(deps: DashboardDeps, accountId: string, s: ControlSubject) {
  const { store } = deps;
  const now = deps.clock();
  const memberId = s.kind === 'member' ? s.id : s.kind === 'key' ? s.key.memberId : null;
  const [limits, policies, groups, budgets] = await Promise.all([
    store.spendLimits.ofAccount(accountId),
    store.rbacGroups.policies(accountId),
    store.rbacGroups.list(accountId, { limit: 1000 }),
    listBudgets(deps, accountId, {}, { limit: 1000 }),
  ]);
  const groupName = new Map(groups.rows.map((g) => [g.id, g.name]));
  const myGroups =
    s.kind === 'group'
      ? [s.id]
      : memberId
        ? ((await store.rbacGroups.memberGroups(accountId, [memberId]))[0]?.groupIds ?? [])
        : [];
  const ownScope =
    s.kind === 'member' ? s.id : s.kind === 'group' ? s.id : s.kind === 'key' ? s.key.id : accountId;
  const where = (scopeId: string, type: string) =>
    scopeId === ownScope
      ? `this ${s.kind}`
      : type === 'organization'
        ? 'the account'
        : type === 'rbac_group'
          ? `group ${groupName.get(scopeId) ?? scopeId}`
          : type === 'user'
            ? 'its member'
            : `key ${scopeId}`;

  // Spend per limit, from the same report the account API answers: the member's own on a member's
  // or key's page; on the account's and a group's, where a limit holds each member to it, the
  // most any one of them has spent against it (the one closest to it).
  const spent = new Map<string, number>();
  const measured = memberId
    ? [memberId]
    : s.kind === 'group'
      ? await groupMembers(store, accountId, s.id)
      : s.kind === 'account'
        ? null
        : [];
  const report = await effectiveReport(deps, accountId, { memberIds: measured, periods: null });
  for (const r of report) spent.set(r.source.id, Math.max(spent.get(r.source.id) ?? 0, r.spentCents));

  const rows: ControlRow[] = [];
  for (const l of limits) {
    const applies =
      s.kind === 'account' ||
      l.scopeType === 'organization' ||
      (l.scopeType === 'rbac_group' && myGroups.includes(l.scopeId)) ||
      (l.scopeType === 'user' && l.scopeId === memberId);
    if (!applies) continue;
    const used = spent.get(l.id) ?? null;
    rows.push({
      rule: 'Spend limit',
      setOn:
        s.kind === 'account' && l.scopeType !== 'organization'
          ? `${l.scopeType} ${l.scopeId}`
          : where(l.scopeId, l.scopeType),
      own: l.scopeId === ownScope,
      limit: `${l.amountCents === null ? 'no limit' : usd(l.amountCents)}${l.hold === 'ceiling' ? ' (strict)' : ''}`,
      period: l.period,
      spentCents: used,
      leftCents: used === null || l.amountCents === null ? null : Math.max(0, l.amountCents - used),
      resets: new Date(periodOf(l.period, now).end),
      ...(await setBy(store, accountId, l.id, ['spend_limit.set'])),
      removeId: l.id,
    });
  }
  for (const b of budgets.rows) {
    const applies =
      s.kind === 'account' ||
      b.scope === 'account' ||
      (b.scope === 'user' && b.targetId === memberId) ||
      (b.scope === 'api_key' && s.kind === 'key' && b.targetId === s.key.id);
    if (!applies) continue;
    rows.push({
      rule: 'Budget',
      setOn: b.scope === 'account' ? 'the account' : `${b.scope === 'user' ? 'member' : 'key'} ${b.targetId}`,
      own: false,
      limit: `${usd(b.limitCents)} '${b.name}'${b.hardCap ? '' : ' (alerts only)'}`,
      period: b.period,
      spentCents: b.progress.spentCents,
      leftCents: Math.max(0, b.progress.limitCents - b.progress.spentCents),
      resets: b.progress.periodEnd,
      ...(await setBy(store, accountId, b.id, ['budget.create', 'budget.update'])),
      removeId: null,
    });
  }
  rows.push(...(await scopeRateRows(deps, accountId, s, { memberId, myGroups, where })));
  if (s.kind === 'key') rows.push(...(await keyRows(deps, s.key, true)));
  else if (s.kind === 'member') {
    const keys = await store.keys.list(accountId, { status: 'active', memberId: s.id }, { limit: 100 });
    for (const k of keys.rows) rows.push(...(await keyRows(deps, k, false)));
  }
  for (const p of policies) {
    const applies =
      s.kind === 'account' ||
      p.subjectType === 'organization' ||
      (p.subjectType === 'rbac_group' && myGroups.includes(p.subjectId)) ||
      (p.subjectType === 'user' && p.subjectId === memberId) ||
      (p.subjectType === 'api_key' && s.kind === 'key' && p.subjectId === s.key.id);
    if (!applies) continue;
    rows.push({
      rule: 'Model policy',
      setOn: where(p.subjectId, p.subjectType),
      own: p.subjectId === ownScope,
      limit: `${p.allowedModels === null ? 'any model' : p.allowedModels.join(', ')}${p.maxTokens === null ? '' : `; max_tokens ≤ ${p.maxTokens}`}`,
      period: null,
      spentCents: null,
      leftCents: null,
      resets: null,
      ...(await setBy(store, accountId, p.subjectId, ['model_policy.set'])),
      removeId: 'policy',
    });
  }
  return rows;
}

/** The ids of a group's members (a group's page measures its limits against them). */
async function groupMembers(store: AccountStore, accountId: string, groupId: string): Promise<string[]> {
  const all = await store.rbacGroups.memberGroups(accountId, null);
  return all.filter((m) => m.groupIds.includes(groupId)).map((m) => m.memberId);
}
