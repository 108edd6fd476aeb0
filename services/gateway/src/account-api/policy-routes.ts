import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import { GatewayError } from '../lib/errors';
import { MODEL_PATTERN } from '../lib/model-policy';
import { operation } from '../lib/operation';
import type { ModelPolicyRecord } from '../accounts/rbac-group-queries';
import type { AccountStore } from '../accounts/service';

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

/** Model policy (Keygate's own resource). */
export function policyRoutes(deps: { store: AccountStore }): Hono<AdminEnv> {
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

  return app;
}

async function subjectOf(
  store: AccountStore,
  accountId: string,
  s: z.output<typeof Subject>,
): Promise<string> {
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
