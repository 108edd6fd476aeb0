import { generateKey, hashKey, keyHint } from '../auth/keys';
import type { KeyResolver } from '../auth/resolver';
import type { EgressPolicy } from '../lib/egress';
import { GatewayError } from '../lib/errors';
import { newId } from '../lib/ids';
import type { SecretBox } from '../lib/secret-box';
import { PlanTooSmallError } from '../tenancy/member-queries';
import type { AccountPatch, AccountRecord, MemberRecord, PlanRecord } from '../tenancy/account-queries';
import type { AuditEntry } from '../tenancy/audit-queries';
import type { KeyRecord } from '../tenancy/key-queries';
import type { Store } from '../store';
import { checkTimeZone } from '../reports/time-zone';
import { createdAudit } from './keys';

export { createKey, type NewKey } from './keys';

const PROVIDER_KEY = /^sk-ant-[A-Za-z0-9_-]{8,}$/;
const DAY = 86_400_000;

/**
 * The kernel's rows the account rules, and the APIs and pages over them, read and write: accounts,
 * members and keys with their audit, groups and invites, budgets and limits, alerts, and the call
 * log's figures the reports show.
 */
export type AccountStore = Pick<
  Store,
  | 'db'
  | 'accounts'
  | 'members'
  | 'keys'
  | 'audit'
  | 'invites'
  | 'rbacGroups'
  | 'budgets'
  | 'spendLimits'
  | 'rateLimits'
  | 'alerts'
  | 'calls'
  | 'usage'
  | 'claudeCode'
  | 'agentTree'
  | 'telemetry'
>;

export interface ServiceDeps {
  store: AccountStore;
  box: SecretBox;
  clock: () => number;
  /** Drops this instance's cached keys at once; other instances hear it through the database. */
  evict?: Pick<KeyResolver, 'invalidateKey' | 'invalidateMember' | 'invalidateAccount'>;
  /** Overrides every plan's trial length (KEYGATE_TRIAL_DAYS). */
  trialDays?: number | null;
  /** Where webhook endpoints may point, and how many an account may have (strict and 20 unless set). */
  webhooks?: WebhookRules;
}

export interface WebhookRules {
  egress: EgressPolicy;
  maxEndpoints: number;
}

export function checkProviderKey(key: string): void {
  if (!PROVIDER_KEY.test(key)) {
    throw new GatewayError(
      'invalid_request_error',
      "provider_key: expected an Anthropic API key ('sk-ant-…').",
    );
  }
}

/** What the provider shows of a key in its Admin API's key list: the first 16 characters and the last 4. */
export const providerKeyPrint = (key: string) => ({ head: key.slice(0, 16), tail: key.slice(-4) });

export function providerKeyHint(key: string): string {
  return `sk-ant-…${key.slice(-4)}`;
}

/** An account and its plan, or the 404 of an account that does not exist. */
export async function accountWithPlan(
  deps: Pick<ServiceDeps, 'store'>,
  id: string,
): Promise<{ account: AccountRecord; plan: PlanRecord }> {
  const account = await deps.store.accounts.get(id);
  const plan = account && (await deps.store.accounts.plan(account.planId));
  if (!account || !plan) throw new GatewayError('not_found_error', `No account with id '${id}'.`);
  return { account, plan };
}

export interface NewAccount {
  name: string;
  plan: string;
  providerKey?: string | null;
  adminEmail?: string | null;
  adminName?: string | null;
  trialDays?: number | null;
  actor?: string;
}

export interface CreatedAccount {
  account: AccountRecord;
  admin: { member: MemberRecord; key: KeyRecord; secret: string } | null;
}

/** Creates an account on a plan (trial started), and optionally its first admin with an admin key, atomically. */
export async function createAccount(deps: ServiceDeps, input: NewAccount): Promise<CreatedAccount> {
  const plan = await deps.store.accounts.plan(input.plan);
  if (!plan)
    throw new GatewayError(
      'invalid_request_error',
      `plan: unknown plan '${input.plan}' (expected solo, team or scale).`,
    );
  if (input.providerKey) checkProviderKey(input.providerKey);
  const actor = input.actor ?? 'operator';
  const id = newId('acct');
  const trialDays = input.trialDays ?? deps.trialDays ?? plan.trialDays;
  const audit: AuditEntry[] = [
    { actor, action: 'account.create', targetId: id, details: { plan: plan.id, trial_days: trialDays } },
  ];
  let first = null;
  let secret = '';
  if (input.adminEmail) {
    secret = generateKey('admin');
    const member = {
      id: newId('user'),
      accountId: id,
      email: input.adminEmail,
      name: input.adminName ?? input.adminEmail,
      role: 'admin' as const,
    };
    const key = {
      id: newId('key'),
      accountId: id,
      memberId: member.id,
      kind: 'admin' as const,
      name: 'first admin key',
      app: null,
      environment: null,
      hint: keyHint(secret),
      createdBy: actor,
    };
    first = { member, key, hash: hashKey(secret) };
    audit.push(
      { actor, action: 'user.add', targetId: member.id, details: { email: member.email, role: member.role } },
      createdAudit(key, actor),
    );
  }
  const created = await deps.store.accounts.create(
    {
      id,
      name: input.name,
      planId: plan.id,
      providerKeySealed: input.providerKey
        ? deps.box.seal(input.providerKey, { purpose: 'provider-key', row: id })
        : null,
      providerKeyHint: input.providerKey ? providerKeyHint(input.providerKey) : null,
      providerKeyPrint: input.providerKey ? providerKeyPrint(input.providerKey) : null,
      trialEndsAt: new Date(deps.clock() + trialDays * DAY),
    },
    first,
    audit,
  );
  const admin = created.member && created.key ? { member: created.member, key: created.key, secret } : null;
  return { account: created.account, admin };
}

export interface AccountChange {
  name?: string;
  plan?: string;
  status?: AccountRecord['status'];
  providerKey?: string;
  timeZone?: string;
  membersManageOwnKeys?: boolean;
}

/** Renames, moves to another plan, suspends or reactivates, or sets the provider key; effective everywhere at once. */
export async function updateAccount(
  deps: ServiceDeps,
  id: string,
  change: AccountChange,
  actor: string,
): Promise<AccountRecord> {
  const patch: AccountPatch = {};
  if (change.name) patch.name = change.name;
  if (change.status) patch.status = change.status;
  if (change.plan) {
    const plan = await deps.store.accounts.plan(change.plan);
    if (!plan)
      throw new GatewayError(
        'invalid_request_error',
        `plan: unknown plan '${change.plan}' (expected solo, team or scale).`,
      );
    patch.planId = plan.id;
  }
  if (change.timeZone !== undefined) patch.timeZone = checkTimeZone(change.timeZone);
  if (change.membersManageOwnKeys !== undefined) patch.membersManageOwnKeys = change.membersManageOwnKeys;
  if (change.providerKey !== undefined) {
    checkProviderKey(change.providerKey);
    patch.provider = {
      sealed: deps.box.seal(change.providerKey, { purpose: 'provider-key', row: id }),
      hint: providerKeyHint(change.providerKey),
      print: providerKeyPrint(change.providerKey),
    };
  }
  const updated = await deps.store.accounts
    .update(id, patch, (before) => accountAudit(before, patch, actor))
    .catch((err) => {
      if (!(err instanceof PlanTooSmallError)) throw err;
      throw new GatewayError('invalid_request_error', `plan: ${err.message}; remove members first.`);
    });
  if (!updated) throw new GatewayError('not_found_error', `No account with id '${id}'.`);
  deps.evict?.invalidateAccount(id);
  return updated;
}

function accountAudit(before: AccountRecord, patch: AccountPatch, actor: string): AuditEntry[] {
  const out: AuditEntry[] = [];
  const entry = (action: string, details?: Record<string, unknown>) =>
    out.push({ actor, action, targetId: before.id, ...(details ? { details } : {}) });
  if (patch.status && patch.status !== before.status)
    entry(patch.status === 'suspended' ? 'account.suspend' : 'account.reactivate');
  if (patch.planId && patch.planId !== before.planId)
    entry('account.plan_change', { from: before.planId, to: patch.planId });
  if (patch.name && patch.name !== before.name)
    entry('account.rename', { from: before.name, to: patch.name });
  if (patch.provider) entry('account.provider_key_set', { hint: patch.provider.hint });
  if (patch.timeZone && patch.timeZone !== before.timeZone)
    entry('account.time_zone', { from: before.timeZone, to: patch.timeZone });
  if (
    patch.membersManageOwnKeys !== undefined &&
    patch.membersManageOwnKeys !== before.membersManageOwnKeys
  ) {
    entry('account.members_manage_own_keys', { to: patch.membersManageOwnKeys });
  }
  return out;
}
