import type { CallRecord } from '../lib/call-record';
import type { Prices } from '../pricing/prices';
import type { Statement } from '../billing/statement';
import type { AccountRecord, MemberRecord } from '../tenancy/account-queries';
import type { AuditRecord } from '../tenancy/audit-queries';
import type { KeyRecord } from '../tenancy/key-queries';

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
    /** 'failing': the provider refused the key; an admin must set a new one. */
    provider_key_status: a.providerKeyHint === null ? ('missing' as const) : a.providerKeyStatus,
    provider_key_failed_at: iso(a.providerKeyFailedAt),
    trial_ends_at: iso(a.trialEndsAt),
    created_at: iso(a.createdAt),
    /** The IANA zone report day buckets start in. */
    time_zone: a.timeZone,
    members_manage_own_keys: a.membersManageOwnKeys,
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
    limits: {
      requests_per_minute: k.limitRpm,
      tokens_per_minute: k.limitTpm,
      input_tokens_per_minute: k.limitItpm,
      output_tokens_per_minute: k.limitOtpm,
      monthly_spend_cap_cents: k.limitMonthlySpendCents,
    },
    resumable_streams: k.resumableStreams,
    created_at: iso(k.createdAt),
    created_by: k.createdBy,
    last_used_at: iso(k.lastUsedAt),
  };
}

export function auditJson(e: AuditRecord) {
  return {
    id: e.id,
    type: 'audit_event' as const,
    action: e.action,
    actor: e.actor,
    actor_type: e.actor.startsWith('key_') ? ('api_key' as const) : e.actor,
    target_id: e.targetId,
    details: e.details ?? null,
    created_at: iso(e.createdAt),
  };
}

/**
 * One call of the call log; `usage` is the provider's usage object as it was served, except
 * when `estimated`: the stream ended before the provider's final count, and
 * `usage.output_tokens` is the gateway's estimate from the content it forwarded.
 */
export function callJson(prices: Prices, r: CallRecord) {
  return {
    id: r.id,
    type: 'request' as const,
    api_key_id: r.keyId,
    user_id: r.memberId,
    app: r.app,
    environment: r.environment,
    group_id: r.groupId,
    client: r.client,
    endpoint: r.endpoint,
    model: r.model,
    stream: r.stream,
    status: r.status,
    error_type: r.errorType,
    /** Keygate: the rule that refused the call (a rate limit, a spend limit, a budget), null when none did. */
    refusal: r.refusal ?? null,
    usage: r.usage,
    cost: prices.callCostJson(r),
    partial: r.partial,
    estimated: r.estimated,
    retry_count: r.retryCount,
    latency_ms: Math.round(r.latencyMs),
    ttfb_ms: r.ttfbMs == null ? null : Math.round(r.ttfbMs),
    upstream_message_id: r.upstreamMessageId,
    upstream_request_id: r.upstreamRequestId,
    /** Keygate: the account's upstream that served the call (`ups_…`, or `provider_key`); null when the provider key is the only one. */
    upstream: r.upstream ?? null,
    created_at: iso(r.createdAt),
  };
}

export function statementJson(s: Statement) {
  return {
    type: 'statement' as const,
    month: s.month,
    plan: s.plan,
    currency: s.currency,
    unit_price_cents: s.unitPriceCents,
    per_seat: s.perSeat,
    trial_days: s.trialDays,
    billable_days: s.billableDays,
    seat_days: s.seatDays,
    lines: s.lines.map((l) => ({
      from: l.from,
      to: l.to,
      days: l.days,
      seats: l.seats,
      amount_cents: l.cents,
    })),
    total_cents: s.totalCents,
  };
}
