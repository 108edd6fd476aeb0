import type { Prices } from '../pricing/prices';
import type { EffectiveRow } from '../budgets/effective';
import { effectiveReport } from '../budgets/effective';
import { GatewayError } from '../lib/errors';
import type { IncreaseRequestRecord, SpendLimitRecord } from '../budgets/spend-limit-queries';
import type { AccountStore } from '../accounts/service';

// The provider's spend-limit shapes, as the official TypeScript SDK 1.11 types them
// (resources/beta/organization/spend-limits/*.d.ts) and documents them at
// https://platform.claude.com/docs/en/api/beta/organization/spend_limits (read 2026-11-25):
// amounts are integer strings of USD cents; spend to date may carry three decimals.

export type Deps = { store: AccountStore; clock: () => number; prices: Prices };

const amountOf = (c: number | null) => (c === null ? null : String(c));

function scopeJson(l: SpendLimitRecord) {
  if (l.scopeType === 'organization') return { type: 'organization' as const };
  if (l.scopeType === 'rbac_group') return { type: 'rbac_group' as const, rbac_group_id: l.scopeId };
  return { type: 'user' as const, user_id: l.scopeId };
}

export function spendLimitJson(l: SpendLimitRecord) {
  return {
    id: l.id,
    type: 'spend_limit' as const,
    amount: amountOf(l.amountCents),
    currency: 'USD',
    is_enabled: true,
    period: l.period,
    hold: l.hold ?? 'expected',
    scope: scopeJson(l),
    created_at: l.createdAt.toISOString(),
    updated_at: l.updatedAt.toISOString(),
  };
}

export function summaryJson(r: EffectiveRow) {
  // A key of no member reports as the provider's scoped API key actor, under the organization's limit.
  const member = r.kind === 'member';
  return {
    actor: member
      ? {
          type: 'user_actor' as const,
          user_id: r.principalId,
          email_address: r.email,
          name: r.name,
          deleted: false,
        }
      : { type: 'scoped_api_key_actor' as const, scoped_api_key_id: r.principalId },
    amount: amountOf(r.amountCents),
    currency: 'USD',
    period: r.period,
    period_to_date_spend: String(Math.round(r.spentCents * 1000) / 1000),
    scope: member ? { type: 'user' as const, user_id: r.principalId } : { type: 'organization' as const },
    source: scopeJson(r.source),
    spend_limit_id: r.source.id,
  };
}

/** Who resolved a request: the member behind the admin key (user_actor), or the key itself. */
async function actorJson(deps: Deps, accountId: string, actor: string | null) {
  if (!actor) return null;
  const key = actor.startsWith('key_') ? await deps.store.keys.get(accountId, actor) : null;
  const memberId = key ? key.memberId : actor.startsWith('user_') ? actor : null;
  const member = memberId ? await deps.store.members.get(accountId, memberId) : null;
  if (member)
    return {
      type: 'user_actor' as const,
      user_id: member.id,
      email_address: member.email,
      name: member.name,
      deleted: member.status !== 'active',
    };
  return { type: 'scoped_api_key_actor' as const, scoped_api_key_id: actor };
}

export async function increaseJson(deps: Deps, r: IncreaseRequestRecord) {
  const summary =
    r.status === 'pending'
      ? (await effectiveReport(deps, r.accountId, { memberIds: [r.memberId], periods: [r.period] }))[0]
      : undefined;
  return {
    id: r.id,
    type: 'spend_limit_increase_request' as const,
    actor: {
      type: 'user_actor' as const,
      user_id: r.memberId,
      email_address: r.memberEmail,
      name: r.memberName,
      deleted: r.memberStatus !== 'active',
    },
    created_at: r.createdAt.toISOString(),
    period: r.period,
    status: r.status,
    resolved_at: r.resolvedAt?.toISOString() ?? null,
    resolved_by: await actorJson(deps, r.accountId, r.resolvedBy),
    spend_summary: summary ? summaryJson(summary) : null,
    // Keygate's own fields: what the member asked for, and why.
    requested_amount: amountOf(r.requestedCents),
    reason: r.reason,
  };
}

/** Approves (writing the member's `user` limit) or denies a pending request. */
export async function resolveIncrease(
  deps: Deps,
  who: { accountId: string; actor: string },
  id: string,
  decision:
    | { status: 'approved'; amountCents: number; period: 'daily' | 'weekly' | 'monthly' | null }
    | { status: 'denied' },
) {
  const r = await deps.store.spendLimits.getRequest(who.accountId, id);
  if (!r) throw new GatewayError('not_found_error', `No spend limit increase request with id '${id}'.`);
  if (r.status === 'denied' && decision.status === 'denied') return { request: r, limit: null };
  if (r.status !== 'pending')
    throw new GatewayError('invalid_request_error', `This request is already ${r.status}.`);
  const out = await deps.store.spendLimits.resolve(
    who.accountId,
    id,
    decision.status === 'approved'
      ? { status: 'approved', amountCents: decision.amountCents, period: decision.period ?? r.period }
      : { status: 'denied' },
    who.actor,
  );
  if (!out) throw new GatewayError('invalid_request_error', 'This request was resolved meanwhile.');
  return out;
}
