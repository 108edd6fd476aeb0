import type { ScopeRateLimitRecord } from '../budgets/rate-limit-queries';
import type { KeyRecord } from '../tenancy/key-queries';

// The provider's organization rate-limit entry, as the official TypeScript SDK 1.11 types it
// (resources/beta/organization/rate-limits.d.ts, `BetaOrganizationRateLimit`; its writes are the
// workspace overrides' `{ limits: [{ type, value | null }] }`, workspaces/rate-limits.d.ts; read
// 2026-11-29). The provider's entries are per model family; Keygate's apply to every model, one
// entry per scope, which Keygate's own `scope` and `source` fields name.

export const LIMIT_TYPES = {
  requests_per_minute: 'rpm',
  // Keygate counts input as the provider's cache-aware limit does: cache reads are free.
  input_tokens_per_minute: 'itpm',
  input_tokens_per_minute_cache_aware: 'itpm',
  output_tokens_per_minute: 'otpm',
  tokens_per_minute: 'tpm',
} as const;

type Value = { type: string; value: number };

function values(v: { rpm: number | null; itpm: number | null; otpm: number | null; tpm?: number | null }) {
  const out: Value[] = [];
  if (v.rpm != null) out.push({ type: 'requests_per_minute', value: v.rpm });
  if (v.tpm != null) out.push({ type: 'tokens_per_minute', value: v.tpm });
  if (v.itpm != null) out.push({ type: 'input_tokens_per_minute', value: v.itpm });
  if (v.otpm != null) out.push({ type: 'output_tokens_per_minute', value: v.otpm });
  return out;
}

const entry = (id: string, groupId: string, name: string, limits: Value[]) => ({
  id,
  type: 'rate_limit' as const,
  group: { id: groupId, type: 'model_group' as const, display_name: `All models, ${name}` },
  limits,
  models: null,
});

export const keyLimited = (k: KeyRecord) =>
  k.kind !== 'admin' &&
  (k.limitRpm != null || k.limitTpm != null || k.limitItpm != null || k.limitOtpm != null);

export function keyRateLimitJson(k: KeyRecord) {
  return {
    ...entry(
      `rl_${k.id}`,
      k.id,
      `key '${k.name}'`,
      values({ rpm: k.limitRpm, itpm: k.limitItpm, otpm: k.limitOtpm, tpm: k.limitTpm }),
    ),
    scope: { type: 'api_key' as const, api_key_id: k.id },
    source: 'set' as const,
  };
}

export function scopeRateLimitJson(r: ScopeRateLimitRecord) {
  const scope =
    r.scopeType === 'organization'
      ? { type: 'organization' as const }
      : r.scopeType === 'rbac_group'
        ? { type: 'rbac_group' as const, rbac_group_id: r.scopeId }
        : r.scopeId === '*'
          ? { type: 'user' as const, user_id: null }
          : { type: 'user' as const, user_id: r.scopeId };
  const name =
    r.source === 'plan'
      ? "each member without a limit of their own (the plan's default)"
      : r.scopeType === 'organization'
        ? 'the whole account'
        : r.scopeType === 'rbac_group'
          ? `group ${r.scopeId}`
          : `member ${r.scopeId}`;
  return {
    ...entry(r.id, r.scopeId, name, values(r)),
    scope,
    source: r.source,
    created_by: r.createdBy,
    updated_by: r.updatedBy,
    updated_at: r.updatedAt?.toISOString() ?? null,
  };
}
