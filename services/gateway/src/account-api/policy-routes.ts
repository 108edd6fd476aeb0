import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import { GatewayError } from '../lib/errors';
import { MODEL_PATTERN } from '../lib/model-policy';
import { operation } from '../lib/operation';
import type { KeyRecord } from '../tenancy/key-queries';
import type { ModelPolicyRecord } from '../accounts/rbac-group-queries';
import type { Store } from '../store';
import { cursorJson, cursorParams, pageOf } from './cursor';

const Subject = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('organization') }),
  z.strictObject({ type: z.literal('rbac_group'), rbac_group_id: z.string().min(1) }),
  z.strictObject({ type: z.literal('user'), user_id: z.string().min(1) }),
  // Keygate's: a service account's keys and the workload tokens minted for it.
  z.strictObject({ type: z.literal('service_account'), service_account_id: z.string().min(1) }),
  z.strictObject({ type: z.literal('api_key'), api_key_id: z.string().min(1) }),
]);
const SetPolicy = z.strictObject({
  scope: Subject,
  allowed_models: z
    .array(
      z.string().regex(MODEL_PATTERN, 'a model id, or a family pattern ending in * such as claude-sonnet-*'),
    )
    .max(200)
    .nullable(),
  max_tokens: z.number().int().min(1).max(10_000_000).nullable(),
});
const ListRateLimits = z.object({
  ...cursorParams,
  group_type: z.enum(['batch', 'files', 'model_group', 'skills', 'token_count', 'web_search']).optional(),
  model: z.string().min(1).optional(),
});

function policyJson(p: ModelPolicyRecord) {
  const idField = {
    rbac_group: 'rbac_group_id',
    user: 'user_id',
    service_account: 'service_account_id',
    api_key: 'api_key_id',
  } as const;
  return {
    type: 'model_policy' as const,
    scope:
      p.subjectType === 'organization'
        ? { type: 'organization' as const }
        : { type: p.subjectType, [idField[p.subjectType]]: p.subjectId },
    allowed_models: p.allowedModels,
    max_tokens: p.maxTokens,
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
  };
}

/**
 * Keygate's per-key limits in the shape of the provider's `rate_limits` list (the SDK 1.11's
 * `OrganizationRateLimit`): one entry per key that has limits, its group naming the key. The
 * provider's entries are per model family; Keygate's apply to every model the key may call.
 */
function rateLimitJson(k: KeyRecord) {
  const limits: { type: string; value: number }[] = [];
  if (k.limitRpm != null) limits.push({ type: 'requests_per_minute', value: k.limitRpm });
  if (k.limitTpm != null) limits.push({ type: 'tokens_per_minute', value: k.limitTpm });
  if (k.limitItpm != null) limits.push({ type: 'input_tokens_per_minute', value: k.limitItpm });
  if (k.limitOtpm != null) limits.push({ type: 'output_tokens_per_minute', value: k.limitOtpm });
  return {
    id: `rl_${k.id}`,
    type: 'rate_limit' as const,
    group: { id: k.id, type: 'model_group' as const, display_name: `All models, key '${k.name}'` },
    limits,
    models: null,
  };
}

/** Model policy (Keygate's own resource) and rate limits (the provider's shape). */
export function policyRoutes(deps: { store: Store }): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const { store } = deps;
  const tag = 'Model policy';

  app.get(
    '/model_policies',
    operation({ tag, summary: 'Model policies of the account, its groups, members and keys' }),
    async (c) =>
      c.json({
        data: (await store.rbacGroups.policies(c.var.scope.accountId)).map(policyJson),
        next_page: null,
      }),
  );

  app.post(
    '/model_policies',
    operation({
      tag,
      summary: 'Set the model allow-list (exact ids, family-* patterns) and max_tokens ceiling of a scope',
      body: SetPolicy,
    }),
    async (c) => {
      const b = c.req.valid('json');
      const { accountId, actor } = c.var.scope;
      const subjectId = await subjectOf(store, accountId, b.scope);
      const p = await store.rbacGroups.setPolicy(
        {
          accountId,
          subjectType: b.scope.type,
          subjectId,
          allowedModels: b.allowed_models,
          maxTokens: b.max_tokens,
        },
        actor,
      );
      return c.json(policyJson(p!));
    },
  );

  app.delete(
    '/model_policies',
    operation({ tag, summary: "Remove a scope's model policy", body: z.strictObject({ scope: Subject }) }),
    async (c) => {
      const { accountId, actor } = c.var.scope;
      const subjectId = await subjectOf(store, accountId, c.req.valid('json').scope);
      const p = await store.rbacGroups.removePolicy(accountId, subjectId, actor);
      if (!p) throw new GatewayError('not_found_error', 'This scope has no model policy.');
      return c.json({ ...policyJson(p), type: 'model_policy_deleted' as const });
    },
  );

  app.get(
    '/rate_limits',
    operation({
      tag: 'Rate limits',
      summary: "Keys' rate limits, in the provider's rate_limits shape",
      query: ListRateLimits,
    }),
    async (c) => {
      const q = c.req.valid('query');
      if (q.group_type && q.group_type !== 'model_group') return c.json({ data: [], next_page: null });
      const keys = await store.keys.list(c.var.scope.accountId, { status: 'active' }, { limit: 1000 });
      const limited = keys.rows.filter(
        (k) =>
          k.kind !== 'admin' &&
          (k.limitRpm != null || k.limitTpm != null || k.limitItpm != null || k.limitOtpm != null),
      );
      return c.json(
        cursorJson(
          pageOf(limited, q, (k) => k.id),
          rateLimitJson,
          (k) => k.id,
        ),
      );
    },
  );
  return app;
}

async function subjectOf(store: Store, accountId: string, s: z.output<typeof Subject>): Promise<string> {
  if (s.type === 'organization') return accountId;
  if (s.type === 'rbac_group') {
    if (!(await store.rbacGroups.get(accountId, s.rbac_group_id)))
      throw new GatewayError('not_found_error', `scope.rbac_group_id: no RBAC group '${s.rbac_group_id}'.`);
    return s.rbac_group_id;
  }
  if (s.type === 'user') {
    const m = await store.members.get(accountId, s.user_id);
    if (m?.status !== 'active')
      throw new GatewayError('not_found_error', `scope.user_id: no active member '${s.user_id}'.`);
    return m.id;
  }
  if (s.type === 'service_account') {
    const sa = await store.invites.getServiceAccount(accountId, s.service_account_id);
    if (!sa || sa.archivedAt)
      throw new GatewayError(
        'not_found_error',
        `scope.service_account_id: no active service account '${s.service_account_id}'.`,
      );
    return sa.id;
  }
  const k = await store.keys.get(accountId, s.api_key_id);
  if (!k || k.kind === 'admin')
    throw new GatewayError('not_found_error', `scope.api_key_id: no app key '${s.api_key_id}'.`);
  return k.id;
}
