import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import { GatewayError } from '../lib/errors';
import { newId } from '../lib/ids';
import { operation } from '../lib/operation';
import { listJson, listParams, pageQuery } from '../reports/query';
import {
  DuplicateNameError,
  InviteExistsError,
  type GroupMemberRecord,
  type InviteRecord,
  type RbacGroupRecord,
  type ServiceAccountRecord,
} from '../store';
import { cursorJson, cursorParams, cursorQuery } from './cursor';
import { createKey } from '../accounts/keys';
import type { ServiceDeps } from '../accounts/service';
import { keyJson } from './serialize';
import { name } from './schemas';

// Shapes of the provider's organization API as the official TypeScript SDK 1.11 types them
// (resources/organization/{invites,rbac-groups,service-accounts}.d.ts) and
// https://platform.claude.com/docs/en/api/organization (read 2026-11-25).

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const INVITE_DAYS = 21;

export function inviteJson(i: InviteRecord) {
  return {
    id: i.id,
    type: 'invite' as const,
    email: i.email,
    role: i.role,
    rbac_group_ids: i.rbacGroupIds,
    status: i.status,
    invited_at: i.createdAt.toISOString(),
    expires_at: i.expiresAt.toISOString(),
    accepted_at: iso(i.acceptedAt),
  };
}

export function groupJson(g: RbacGroupRecord) {
  return {
    id: g.id,
    type: 'rbac_group' as const,
    name: g.name,
    // Keygate has no custom roles: a group carries members, model policy and spend limits.
    role_ids: [] as string[],
    source_type: 'direct' as const,
    idp_group: g.idpGroup,
    created_at: g.createdAt.toISOString(),
    updated_at: g.updatedAt.toISOString(),
  };
}

function groupMemberJson(m: GroupMemberRecord) {
  return {
    type: 'rbac_group_member' as const,
    rbac_group_id: m.groupId,
    user_id: m.memberId,
    email: m.email,
    created_at: m.createdAt.toISOString(),
  };
}

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

const CreateInvite = z.strictObject({
  email: z.email(),
  // The provider's invite roles; Keygate members are admins or developers, and every one of
  // these invites a developer. `admin` invites an account admin.
  role: z.enum(['user', 'developer', 'claude_code_user', 'admin']),
  rbac_group_ids: z.array(z.string().min(1)).max(100).optional(),
});
const GroupBody = z.strictObject({
  name,
  idp_group: z.string().trim().min(1).max(200).nullable().optional(),
});
const UpdateGroup = z.strictObject({
  name: name.nullable().optional(),
  idp_group: z.string().trim().min(1).max(200).nullable().optional(),
});
const AddMember = z.strictObject({ user_id: z.string().min(1) });
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

const missing = (what: string, id: string) =>
  new GatewayError('not_found_error', `No ${what} with id '${id}'.`);

/** Invites, RBAC groups and their members, service accounts: the provider's shapes over Keygate's accounts. */
export function orgRoutes(deps: ServiceDeps): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const { store } = deps;

  const tag = 'Invites';
  app.post(
    '/invites',
    operation({ tag, summary: 'Invite a person by email', body: CreateInvite }),
    async (c) => {
      const body = c.req.valid('json');
      const { accountId, actor } = c.var.scope;
      const existing = await store.members.list(
        accountId,
        { status: 'active', email: body.email },
        { limit: 1 },
      );
      if (existing.rows.length > 0)
        throw new GatewayError(
          'invalid_request_error',
          `email: ${body.email} is already a member of this account.`,
        );
      for (const id of body.rbac_group_ids ?? [])
        if (!(await store.rbacGroups.get(accountId, id))) throw missing('RBAC group', id);
      try {
        const invite = await store.invites.create(
          {
            id: newId('invite'),
            accountId,
            email: body.email,
            role: body.role,
            rbacGroupIds: body.rbac_group_ids ?? [],
            expiresAt: new Date(deps.clock() + INVITE_DAYS * 86_400_000),
          },
          actor,
        );
        return c.json(inviteJson(invite));
      } catch (e) {
        if (e instanceof InviteExistsError)
          throw new GatewayError(
            'invalid_request_error',
            `email: ${body.email} already has a pending invite.`,
          );
        throw e;
      }
    },
  );
  app.get('/invites', operation({ tag, summary: 'List invites', query: z.object(listParams) }), async (c) =>
    c.json(
      listJson(await store.invites.list(c.var.scope.accountId, pageQuery(c.req.valid('query'))), inviteJson),
    ),
  );
  app.get('/invites/:id', operation({ tag, summary: 'An invite' }), async (c) => {
    const invite = await store.invites.get(c.var.scope.accountId, c.req.param('id'));
    if (!invite) throw missing('invite', c.req.param('id'));
    return c.json(inviteJson(invite));
  });
  app.delete('/invites/:id', operation({ tag, summary: 'Delete a pending invite' }), async (c) => {
    const invite = await store.invites.remove(c.var.scope.accountId, c.req.param('id'), c.var.scope.actor);
    if (!invite) throw missing('pending invite', c.req.param('id'));
    return c.json({ id: invite.id, type: 'invite_deleted' as const });
  });

  const gtag = 'RBAC groups';
  app.post(
    '/rbac_groups',
    operation({ tag: gtag, summary: 'Create a group', body: GroupBody }),
    async (c) => {
      const b = c.req.valid('json');
      const g = await store.rbacGroups.create(
        {
          id: newId('rbacgrp'),
          accountId: c.var.scope.accountId,
          name: b.name,
          idpGroup: b.idp_group ?? null,
        },
        c.var.scope.actor,
      );
      return c.json(groupJson(g));
    },
  );
  app.get(
    '/rbac_groups',
    operation({ tag: gtag, summary: 'List groups', query: z.object(cursorParams) }),
    async (c) => {
      const page = await store.rbacGroups.list(c.var.scope.accountId, cursorQuery(c.req.valid('query')));
      return c.json(cursorJson(page, groupJson, (g) => g.id));
    },
  );
  app.get('/rbac_groups/:id', operation({ tag: gtag, summary: 'A group' }), async (c) => {
    const g = await store.rbacGroups.get(c.var.scope.accountId, c.req.param('id'));
    if (!g) throw missing('RBAC group', c.req.param('id'));
    return c.json(groupJson(g));
  });
  app.post(
    '/rbac_groups/:id',
    operation({
      tag: gtag,
      summary: 'Rename a group or change the identity-provider group it follows',
      body: UpdateGroup,
    }),
    async (c) => {
      const b = c.req.valid('json');
      const g = await store.rbacGroups.update(
        c.var.scope.accountId,
        c.req.param('id'),
        {
          ...(b.name ? { name: b.name } : {}),
          ...(b.idp_group !== undefined ? { idpGroup: b.idp_group } : {}),
        },
        c.var.scope.actor,
      );
      if (!g) throw missing('RBAC group', c.req.param('id'));
      return c.json(groupJson(g));
    },
  );
  app.delete(
    '/rbac_groups/:id',
    operation({ tag: gtag, summary: 'Delete a group, its policy and limits' }),
    async (c) => {
      const g = await store.rbacGroups.remove(c.var.scope.accountId, c.req.param('id'), c.var.scope.actor);
      if (!g) throw missing('RBAC group', c.req.param('id'));
      return c.json({ id: g.id, type: 'rbac_group_deleted' as const });
    },
  );
  app.get(
    '/rbac_groups/:id/members',
    operation({ tag: gtag, summary: "A group's members", query: z.object(cursorParams) }),
    async (c) => {
      const { accountId } = c.var.scope;
      if (!(await store.rbacGroups.get(accountId, c.req.param('id'))))
        throw missing('RBAC group', c.req.param('id'));
      const page = await store.rbacGroups.members(
        accountId,
        c.req.param('id'),
        cursorQuery(c.req.valid('query')),
      );
      return c.json(cursorJson(page, groupMemberJson, (m) => m.memberId));
    },
  );
  app.post(
    '/rbac_groups/:id/members',
    operation({ tag: gtag, summary: 'Add a member to a group', body: AddMember }),
    async (c) => {
      const { user_id } = c.req.valid('json');
      const { accountId, actor } = c.var.scope;
      const added = await store.rbacGroups.addMember(accountId, c.req.param('id'), user_id, actor);
      if (!added)
        throw new GatewayError(
          'not_found_error',
          `No RBAC group '${c.req.param('id')}' or active member '${user_id}'.`,
        );
      return c.json(
        groupMemberJson({
          groupId: c.req.param('id'),
          memberId: user_id,
          email: added.email,
          createdAt: added.createdAt,
          via: 'admin',
        }),
      );
    },
  );
  app.delete(
    '/rbac_groups/:id/members/:user_id',
    operation({ tag: gtag, summary: 'Remove a member from a group' }),
    async (c) => {
      const { accountId, actor } = c.var.scope;
      const removed = await store.rbacGroups.removeMember(
        accountId,
        c.req.param('id'),
        c.req.param('user_id'),
        actor,
      );
      if (!removed)
        throw new GatewayError(
          'not_found_error',
          `User '${c.req.param('user_id')}' is not an admin-added member of RBAC group '${c.req.param('id')}'.`,
        );
      return c.json({
        type: 'rbac_group_member_deleted' as const,
        rbac_group_id: c.req.param('id'),
        user_id: c.req.param('user_id'),
      });
    },
  );

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
    if (!s) throw missing('service account', c.req.param('id'));
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
      if (!s) throw missing('service account', c.req.param('id'));
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
      if (!s) throw missing('service account', c.req.param('id'));
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
      if (!s) throw missing('service account', c.req.param('id'));
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
