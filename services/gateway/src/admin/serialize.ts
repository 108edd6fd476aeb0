import type { AccountRecord, KeyRecord, MemberRecord } from '../store';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The account as APIs and the CLI show it; the provider key only as a hint. */
export function accountJson(a: AccountRecord) {
  return {
    id: a.id,
    type: 'organization' as const,
    name: a.name,
    plan: a.planId,
    status: a.status,
    provider_key_hint: a.providerKeyHint,
    trial_ends_at: iso(a.trialEndsAt),
    created_at: iso(a.createdAt),
  };
}

export function memberJson(m: MemberRecord) {
  return {
    id: m.id,
    type: 'user' as const,
    email: m.email,
    name: m.name,
    role: m.role,
    status: m.status,
    added_at: iso(m.createdAt),
    removed_at: iso(m.removedAt),
  };
}

/** A key in the shape of the provider's Admin API `api_key`, plus Keygate's scope fields. */
export function keyJson(k: KeyRecord) {
  return {
    id: k.id,
    type: 'api_key' as const,
    name: k.name,
    kind: k.kind,
    status: k.status,
    partial_key_hint: k.hint,
    member_id: k.memberId,
    app: k.app,
    environment: k.environment,
    expires_at: iso(k.expiresAt),
    limits: { requests_per_minute: k.limitRpm, tokens_per_minute: k.limitTpm, monthly_spend_cap_cents: k.limitMonthlySpendCents },
    created_at: iso(k.createdAt),
    created_by: k.createdBy,
    last_used_at: iso(k.lastUsedAt),
  };
}
