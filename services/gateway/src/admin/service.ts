import { generateKey, hashKey, keyHint, type KeyKind } from '../auth/keys';
import { GatewayError } from '../lib/errors';
import { newId } from '../lib/ids';
import type { SecretBox } from '../lib/secret-box';
import type { AccountRecord, KeyRecord, MemberRecord, Store } from '../store';

const PROVIDER_KEY = /^sk-ant-[A-Za-z0-9_-]{8,}$/;
const DAY = 86_400_000;

export interface ServiceDeps {
  store: Store;
  box: SecretBox;
  clock: () => number;
}

export function checkProviderKey(key: string): void {
  if (!PROVIDER_KEY.test(key)) {
    throw new GatewayError('invalid_request_error', "provider_key: expected an Anthropic API key ('sk-ant-…').");
  }
}

export function providerKeyHint(key: string): string {
  return `sk-ant-…${key.slice(-4)}`;
}

export interface NewAccount {
  name: string;
  plan: string;
  providerKey?: string | null;
  adminEmail?: string | null;
  adminName?: string | null;
}

export interface CreatedAccount {
  account: AccountRecord;
  admin: { member: MemberRecord; key: KeyRecord; secret: string } | null;
}

/** Creates an account on a plan (trial started), and optionally its first admin with an admin key. */
export async function createAccount(deps: ServiceDeps, input: NewAccount): Promise<CreatedAccount> {
  const plan = await deps.store.accounts.plan(input.plan);
  if (!plan) throw new GatewayError('invalid_request_error', `plan: unknown plan '${input.plan}' (expected solo, team or scale).`);
  if (input.providerKey) checkProviderKey(input.providerKey);
  const account = await deps.store.accounts.create({
    id: newId('acct'),
    name: input.name,
    planId: plan.id,
    providerKeySealed: input.providerKey ? deps.box.seal(input.providerKey) : null,
    providerKeyHint: input.providerKey ? providerKeyHint(input.providerKey) : null,
    trialEndsAt: new Date(deps.clock() + plan.trialDays * DAY),
  });
  if (!input.adminEmail) return { account, admin: null };
  const member = await deps.store.accounts.createMember({
    id: newId('user'),
    accountId: account.id,
    email: input.adminEmail,
    name: input.adminName ?? input.adminEmail,
    role: 'admin',
  });
  const { key, secret } = await createKey(deps, { accountId: account.id, memberId: member.id, kind: 'admin', name: 'first admin key', createdBy: 'operator' });
  return { account, admin: { member, key, secret } };
}

export interface NewKey {
  accountId: string;
  kind: KeyKind;
  name?: string | null;
  memberId?: string | null;
  app?: string | null;
  environment?: string | null;
  expiresAt?: Date | null;
  limitRpm?: number | null;
  limitTpm?: number | null;
  limitMonthlySpendCents?: number | null;
  createdBy?: string | null;
}

/** Creates a key; the secret exists only in the return value and is stored as SHA-256. */
export async function createKey(deps: ServiceDeps, input: NewKey): Promise<{ key: KeyRecord; secret: string }> {
  if (input.memberId) {
    const member = await deps.store.accounts.member(input.accountId, input.memberId);
    if (!member || member.status !== 'active') throw new GatewayError('not_found_error', `member_id: no active member '${input.memberId}' in this account.`);
  }
  const secret = generateKey(input.kind);
  const key = await deps.store.keys.create(
    {
      id: newId('key'),
      accountId: input.accountId,
      memberId: input.memberId ?? null,
      kind: input.kind,
      name: input.name ?? defaultKeyName(input),
      app: input.app ?? null,
      environment: input.environment ?? null,
      hint: keyHint(secret),
      expiresAt: input.expiresAt ?? null,
      limitRpm: input.limitRpm ?? null,
      limitTpm: input.limitTpm ?? null,
      limitMonthlySpendCents: input.limitMonthlySpendCents ?? null,
      createdBy: input.createdBy ?? null,
    },
    hashKey(secret),
  );
  return { key, secret };
}

function defaultKeyName(k: NewKey): string {
  const scope = [k.app, k.environment].filter(Boolean).join('/');
  return scope ? `${k.kind} key for ${scope}` : `${k.kind} key`;
}
