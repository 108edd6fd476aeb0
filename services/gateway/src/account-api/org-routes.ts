import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import { GatewayError } from '../lib/errors';
import { newId } from '../lib/ids';
import { operation } from '../lib/operation';
import { listJson, listParams, pageQuery } from '../reports/query';
import { InviteExistsError, type InviteRecord } from '../accounts/invite-queries';
import type { GroupMemberRecord, RbacGroupRecord } from '../accounts/rbac-group-queries';
import { cursorJson, cursorParams, cursorQuery } from './cursor';
import type { ServiceDeps } from '../accounts/service';
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

  return app;
}
