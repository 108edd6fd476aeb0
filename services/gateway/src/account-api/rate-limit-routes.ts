import { Hono } from 'hono';
import { z } from 'zod';
import { updateKey } from '../accounts/keys';
import type { AdminEnv } from '../accounts/scope';
import type { AccountStore, ServiceDeps } from '../accounts/service';
import { GatewayError } from '../lib/errors';
import { operation } from '../lib/operation';
import type { RateLimitValues } from '../budgets/rate-limit-queries';
import type { KeyPatch } from '../tenancy/key-queries';
import { cursorJson, cursorParams, pageOf } from './cursor';
import { keyLimited, keyRateLimitJson, LIMIT_TYPES, scopeRateLimitJson } from './rate-limit-json';

const Scope = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('organization') }),
  z.strictObject({ type: z.literal('rbac_group'), rbac_group_id: z.string().min(1) }),
  z.strictObject({ type: z.literal('user'), user_id: z.string().min(1) }),
  z.strictObject({ type: z.literal('api_key'), api_key_id: z.string().min(1) }),
]);
const LimitType = z.enum(Object.keys(LIMIT_TYPES) as [keyof typeof LIMIT_TYPES]);
const SetLimits = z.strictObject({
  scope: Scope,
  // As the provider's workspace overrides: only the types named change; null clears one.
  limits: z
    .array(z.strictObject({ type: LimitType, value: z.number().int().min(1).max(1_000_000_000).nullable() }))
    .min(1)
    .max(5),
});
const ListRateLimits = z.object({
  ...cursorParams,
  group_type: z.enum(['batch', 'files', 'model_group', 'skills', 'token_count', 'web_search']).optional(),
  model: z.string().min(1).optional(),
  scope_type: z.enum(['api_key', 'user', 'rbac_group', 'organization']).optional(),
});

type Entry = ReturnType<typeof keyRateLimitJson> | ReturnType<typeof scopeRateLimitJson>;

/** Every rate limit of the account: its keys', its members', groups' and its own, and the plan's member default. */
async function entries(store: AccountStore, accountId: string): Promise<Entry[]> {
  const keys = await store.keys.list(accountId, { status: 'active' }, { limit: 1000 });
  const scopes = await store.rateLimits.ofAccount(accountId);
  return [...scopes.map(scopeRateLimitJson), ...keys.rows.filter(keyLimited).map(keyRateLimitJson)];
}

/** Rate limits per key, member (user), RBAC group and account, in the provider's `rate_limits` shape. */
export function rateLimitRoutes(deps: ServiceDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const { store } = deps;
  const tag = 'Rate limits';

  app.get(
    '/rate_limits',
    operation({
      tag,
      summary: "The account's rate limits: keys', members', groups' and its own",
      query: ListRateLimits,
    }),
    async (c) => {
      const q = c.req.valid('query');
      if (q.group_type && q.group_type !== 'model_group') return c.json({ data: [], next_page: null });
      const all = (await entries(store, c.var.scope.accountId)).filter(
        (e) => !q.scope_type || e.scope.type === q.scope_type,
      );
      return c.json(
        cursorJson(
          pageOf(all, q, (e) => e.id),
          (e) => e,
          (e) => e.id,
        ),
      );
    },
  );

  app.get('/rate_limits/:id', operation({ tag, summary: 'One rate-limit entry' }), async (c) => {
    const id = c.req.param('id');
    const found = (await entries(store, c.var.scope.accountId)).find((e) => e.id === id);
    if (!found) throw new GatewayError('not_found_error', `No rate limit '${id}' in this account.`);
    return c.json(found);
  });

  app.post(
    '/rate_limits',
    operation({
      tag,
      summary: "Set a key's, member's, group's or the account's rate limits (null clears one kind)",
      body: SetLimits,
    }),
    async (c) => {
      const b = c.req.valid('json');
      const { accountId, actor } = c.var.scope;
      const values: Partial<RateLimitValues> & { tpm?: number | null } = {};
      for (const l of b.limits) values[LIMIT_TYPES[l.type]] = l.value;
      if (b.scope.type === 'api_key') {
        const key = await updateKey(deps, c.var.scope, b.scope.api_key_id, keyPatch(values));
        return c.json(keyRateLimitJson(key));
      }
      if ('tpm' in values)
        throw new GatewayError(
          'invalid_request_error',
          'limits: tokens_per_minute is a key-only limit; members, groups and the account take input_tokens_per_minute and output_tokens_per_minute.',
        );
      const scope = { type: b.scope.type, id: await scopeIdOf(store, accountId, b.scope) };
      const row = await store.rateLimits.set(accountId, scope, values, actor);
      if (row) return c.json(scopeRateLimitJson(row));
      return c.json({ id: null, type: 'rate_limit_deleted' as const, scope: b.scope });
    },
  );

  app.delete('/rate_limits/:id', operation({ tag, summary: "Remove a scope's rate limits" }), async (c) => {
    const id = c.req.param('id');
    const { accountId, actor } = c.var.scope;
    if (id.startsWith('rl_key_')) {
      const keyId = id.slice('rl_'.length);
      await updateKey(deps, c.var.scope, keyId, {
        limitRpm: null,
        limitTpm: null,
        limitItpm: null,
        limitOtpm: null,
      });
      return c.json({ id, type: 'rate_limit_deleted' as const });
    }
    if (id.startsWith('rl_plan_'))
      throw new GatewayError(
        'invalid_request_error',
        "This is the plan's default for members: it cannot be removed, only overridden by a member's own limit.",
      );
    const row = await store.rateLimits.remove(accountId, id, {
      actor,
      action: 'rate_limit.delete',
      targetId: id,
    });
    if (!row) throw new GatewayError('not_found_error', `No rate limit '${id}' in this account.`);
    return c.json({ id, type: 'rate_limit_deleted' as const });
  });
  return app;
}

function keyPatch(v: Partial<RateLimitValues> & { tpm?: number | null }): KeyPatch {
  const p: KeyPatch = {};
  if ('rpm' in v) p.limitRpm = v.rpm ?? null;
  if ('itpm' in v) p.limitItpm = v.itpm ?? null;
  if ('otpm' in v) p.limitOtpm = v.otpm ?? null;
  if ('tpm' in v) p.limitTpm = v.tpm ?? null;
  return p;
}

async function scopeIdOf(
  store: AccountStore,
  accountId: string,
  s: Exclude<z.output<typeof Scope>, { type: 'api_key' }>,
): Promise<string> {
  if (s.type === 'organization') return accountId;
  if (s.type === 'rbac_group') {
    if (!(await store.rbacGroups.get(accountId, s.rbac_group_id)))
      throw new GatewayError('not_found_error', `scope.rbac_group_id: no RBAC group '${s.rbac_group_id}'.`);
    return s.rbac_group_id;
  }
  const m = await store.members.get(accountId, s.user_id);
  if (m?.status !== 'active')
    throw new GatewayError('not_found_error', `scope.user_id: no active member '${s.user_id}'.`);
  return m.id;
}
