import { Hono } from 'hono';
import { z } from 'zod';
import { createKey } from '../accounts/keys';
import type { AdminEnv } from '../accounts/scope';
import type { ServiceDeps } from '../accounts/service';
import { GatewayError } from '../lib/errors';
import { newId } from '../lib/ids';
import { operation } from '../lib/operation';
import { DuplicateNameError, type ServiceAccountRecord } from '../accounts/invite-queries';
import { cursorJson, cursorParams, cursorQuery } from './cursor';
import { name } from './schemas';
import { keyJson } from './serialize';

// The provider's ServiceAccount shape, as the official TypeScript SDK 1.11 types it
// (resources/organization/service-accounts/service-accounts.d.ts), read 2026-11-25.

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const missing = (id: string) => new GatewayError('not_found_error', `No service account with id '${id}'.`);

const slug = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'lowercase letters, digits and hyphens, at most 63');
const CreateServiceAccount = z.strictObject({
  name: slug,
  description: z.string().max(1000).nullable().optional(),
  organization_role: z.enum(['admin', 'developer']).default('developer'),
});
const UpdateServiceAccount = z.strictObject({
  description: z.string().max(1000).nullable().optional(),
  organization_role: z.enum(['admin', 'developer']).nullable().optional(),
});
const ServiceAccountKey = z.strictObject({
  name: name.optional(),
  kind: z.enum(['live', 'test']).default('live'),
  environment: z.string().trim().min(1).max(100).optional(),
});
const ListServiceAccounts = z.object({ ...cursorParams, include_archived: z.stringbool().default(false) });

export function serviceAccountJson(s: ServiceAccountRecord) {
  return {
    id: s.id,
    type: 'service_account' as const,
    name: s.name,
    description: s.description,
    organization_role: s.organizationRole,
    archived_at: iso(s.archivedAt),
    archived_by_actor_id: s.archivedBy,
    created_at: s.createdAt.toISOString(),
    created_by_actor_id: s.createdBy,
    updated_at: s.updatedAt.toISOString(),
    updated_by_actor_id: s.updatedBy,
  };
}

/** Service accounts: the identity of an app or a CI job, owning its keys. */
export function serviceAccountRoutes(deps: ServiceDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const { store } = deps;
  const stag = 'Service accounts';
  app.post(
    '/service_accounts',
    operation({
      tag: stag,
      summary: 'Create a service account (the identity of an app or a CI job)',
      body: CreateServiceAccount,
    }),
    async (c) => {
      const b = c.req.valid('json');
      try {
        const s = await store.invites.createServiceAccount(
          {
            id: newId('svac'),
            accountId: c.var.scope.accountId,
            name: b.name,
            description: b.description ?? null,
            organizationRole: b.organization_role,
          },
          c.var.scope.actor,
        );
        return c.json(serviceAccountJson(s));
      } catch (e) {
        if (e instanceof DuplicateNameError)
          throw new GatewayError(
            'invalid_request_error',
            `name: a service account '${b.name}' exists already.`,
            {
              status: 409,
            },
          );
        throw e;
      }
    },
  );
  app.get(
    '/service_accounts',
    operation({ tag: stag, summary: 'List service accounts, newest first', query: ListServiceAccounts }),
    async (c) => {
      const q = c.req.valid('query');
      const page = await store.invites.listServiceAccounts(
        c.var.scope.accountId,
        q.include_archived,
        cursorQuery(q),
      );
      return c.json(cursorJson(page, serviceAccountJson, (s) => s.id));
    },
  );
  app.get('/service_accounts/:id', operation({ tag: stag, summary: 'A service account' }), async (c) => {
    const s = await store.invites.getServiceAccount(c.var.scope.accountId, c.req.param('id'));
    if (!s) throw missing(c.req.param('id'));
    return c.json(serviceAccountJson(s));
  });
  app.post(
    '/service_accounts/:id',
    operation({
      tag: stag,
      summary: "Change a service account's description or role",
      body: UpdateServiceAccount,
    }),
    async (c) => {
      const b = c.req.valid('json');
      const patch = {
        ...(b.description !== undefined ? { description: b.description } : {}),
        ...(b.organization_role ? { organizationRole: b.organization_role } : {}),
      };
      const s = await store.invites.updateServiceAccount(
        c.var.scope.accountId,
        c.req.param('id'),
        patch,
        c.var.scope.actor,
      );
      if (!s) throw missing(c.req.param('id'));
      if (s === 'archived')
        throw new GatewayError('invalid_request_error', 'This service account is archived.');
      return c.json(serviceAccountJson(s));
    },
  );
  app.post(
    '/service_accounts/:id/archive',
    operation({ tag: stag, summary: 'Archive a service account; its keys are archived with it' }),
    async (c) => {
      const s = await store.invites.archiveServiceAccount(
        c.var.scope.accountId,
        c.req.param('id'),
        c.var.scope.actor,
      );
      if (!s) throw missing(c.req.param('id'));
      return c.json(serviceAccountJson(s));
    },
  );
  app.post(
    '/service_accounts/:id/api_keys',
    operation({
      tag: stag,
      summary: 'Create a key owned by the service account (Keygate); its secret is in this answer only',
      body: ServiceAccountKey,
      status: 201,
    }),
    async (c) => {
      const b = c.req.valid('json');
      const { accountId, actor } = c.var.scope;
      const s = await store.invites.getServiceAccount(accountId, c.req.param('id'));
      if (!s) throw missing(c.req.param('id'));
      if (s.archivedAt) throw new GatewayError('invalid_request_error', 'This service account is archived.');
      const { key, secret } = await createKey(deps, {
        accountId,
        kind: b.kind,
        name: b.name ?? `${s.name} ${b.kind}`,
        memberId: null,
        app: s.name,
        environment: b.environment ?? null,
        createdBy: actor,
      });
      await store.invites.attachKey(accountId, s.id, key.id, actor);
      return c.json({ ...keyJson(key), service_account_id: s.id, key: secret }, 201);
    },
  );
  return app;
}
