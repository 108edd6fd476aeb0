import type { Prices } from '../pricing/prices';
import { Hono } from 'hono';
import { z } from 'zod';
import { GatewayError } from '../lib/errors';
import { operation } from '../lib/operation';
import type { KeyPatch } from '../tenancy/key-queries';
import { createKey, deleteKey, rotateKey, updateKey } from '../accounts/keys';
import { listJson, listParams, pageQuery, timestamp } from '../reports/query';
import { name } from './schemas';
import type { AdminEnv } from '../accounts/scope';
import { keyJson } from './serialize';
import type { ServiceDeps } from '../accounts/service';

const status = z.enum(['active', 'inactive', 'archived']);
const kind = z.enum(['live', 'test', 'admin']);
const label = z.string().trim().min(1).max(100);
const perMinute = z.number().int().min(1).max(100_000_000).nullable();

const Limits = z.strictObject({
  requests_per_minute: perMinute.optional(),
  tokens_per_minute: perMinute.optional(),
  input_tokens_per_minute: perMinute.optional(),
  output_tokens_per_minute: perMinute.optional(),
  /** USD cents, as the provider bills tokens. */
  monthly_spend_cap_cents: z.number().int().min(0).max(1_000_000_000).nullable().optional(),
});

const ListKeys = z.object({
  ...listParams,
  status: status.optional(),
  kind: kind.optional(),
  member_id: z.string().min(1).optional(),
  app: z.string().min(1).optional(),
  environment: z.string().min(1).optional(),
});

const CreateKey = z.strictObject({
  name: name.optional(),
  kind: kind.default('live'),
  member_id: z.string().min(1).optional(),
  app: label.optional(),
  environment: label.optional(),
  expires_at: timestamp.optional(),
  limits: Limits.optional(),
  /** Keygate's: streaming Messages calls are resumable without the `keygate-resumable` header. */
  resumable_streams: z.boolean().optional(),
});

const UpdateKey = z
  .strictObject({
    name: name.optional(),
    status: status.optional(),
    expires_at: timestamp.nullable().optional(),
    limits: Limits.optional(),
    resumable_streams: z.boolean().optional(),
  })
  .refine(
    (b) => Object.keys(b).length > 0,
    'Send at least one of name, status, expires_at, limits and resumable_streams.',
  );

const Rotate = z.strictObject({
  grace_period_seconds: z
    .number()
    .int()
    .min(0)
    .max(7 * 86_400)
    .default(0),
});

export interface KeyRouteDeps extends ServiceDeps {
  /** The gateway's prices: reports, budgets and spend limits cost calls with them. */
  prices: Prices;
  /** Writes this instance's pending last-use times, so listings show them. */
  flushLastUsed?: () => Promise<void>;
}

function limitPatch(l: z.infer<typeof Limits> | undefined): KeyPatch {
  const out: KeyPatch = {};
  if (!l) return out;
  if (l.requests_per_minute !== undefined) out.limitRpm = l.requests_per_minute;
  if (l.tokens_per_minute !== undefined) out.limitTpm = l.tokens_per_minute;
  if (l.input_tokens_per_minute !== undefined) out.limitItpm = l.input_tokens_per_minute;
  if (l.output_tokens_per_minute !== undefined) out.limitOtpm = l.output_tokens_per_minute;
  if (l.monthly_spend_cap_cents !== undefined) out.limitMonthlySpendCents = l.monthly_spend_cap_cents;
  return out;
}

/** API keys: app keys (live, test) and admin keys, in the provider's Admin API shapes. */
export function keyRoutes(deps: KeyRouteDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const tag = 'Keys';
  const fresh = async () => {
    await deps.flushLastUsed?.().catch(() => {});
  };

  app.get(
    '/api_keys',
    operation({ tag, summary: 'List keys (app keys and admin keys)', query: ListKeys }),
    async (c) => {
      const q = c.req.valid('query');
      await fresh();
      const filter = {
        status: q.status ?? null,
        kind: q.kind ?? null,
        memberId: q.member_id ?? null,
        app: q.app ?? null,
        environment: q.environment ?? null,
      };
      return c.json(
        listJson(await deps.store.keys.list(c.var.scope.accountId, filter, pageQuery(q)), keyJson),
      );
    },
  );

  app.post(
    '/api_keys',
    operation({
      tag,
      summary: 'Create a key; its secret is in this answer only',
      body: CreateKey,
      status: 201,
    }),
    async (c) => {
      const body = c.req.valid('json');
      const { key, secret } = await createKey(deps, {
        accountId: c.var.scope.accountId,
        kind: body.kind,
        name: body.name ?? null,
        memberId: body.member_id ?? null,
        app: body.app ?? null,
        environment: body.environment ?? null,
        expiresAt: body.expires_at ?? null,
        ...limitPatch(body.limits),
        resumableStreams: body.resumable_streams ?? false,
        createdBy: c.var.scope.actor,
        planDefaults: true,
      });
      return c.json({ ...keyJson(key), key: secret }, 201);
    },
  );

  app.get('/api_keys/:id', operation({ tag, summary: 'A key' }), async (c) => {
    await fresh();
    const key = await deps.store.keys.get(c.var.scope.accountId, c.req.param('id'));
    if (!key) throw new GatewayError('not_found_error', `No API key with id '${c.req.param('id')}'.`);
    return c.json(keyJson(key));
  });

  app.post(
    '/api_keys/:id',
    operation({
      tag,
      summary: 'Rename a key, change its status, expiry, limits or whether its streams are resumable',
      body: UpdateKey,
    }),
    async (c) => {
      const body = c.req.valid('json');
      const patch: KeyPatch = { ...limitPatch(body.limits) };
      if (body.name !== undefined) patch.name = body.name;
      if (body.status !== undefined) patch.status = body.status;
      if (body.expires_at !== undefined) patch.expiresAt = body.expires_at;
      if (body.resumable_streams !== undefined) patch.resumableStreams = body.resumable_streams;
      return c.json(keyJson(await updateKey(deps, c.var.scope, c.req.param('id'), patch)));
    },
  );

  const rotate = operation({
    tag,
    summary: 'A new secret for the same key id; the old one works for the grace period',
    body: Rotate,
    optionalBody: true,
  });
  app.post('/api_keys/:id/rotate', rotate, async (c) => {
    const body = c.req.valid('json');
    const { key, secret, previousExpiresAt } = await rotateKey(
      deps,
      c.var.scope,
      c.req.param('id'),
      body.grace_period_seconds,
    );
    return c.json({
      ...keyJson(key),
      key: secret,
      previous_key_expires_at: previousExpiresAt?.toISOString() ?? null,
    });
  });

  app.delete(
    '/api_keys/:id',
    operation({ tag, summary: 'Delete a key: refused everywhere at once; its usage stays under its id' }),
    async (c) => {
      const key = await deleteKey(deps, c.var.scope, c.req.param('id'));
      return c.json({ id: key.id, type: 'api_key_deleted' as const });
    },
  );

  return app;
}
