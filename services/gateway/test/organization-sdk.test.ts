import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callModel, startStack, type SeededAccount, type Stack } from './harness';
import { waitFor } from './kit/wait';

/**
 * Issue 19 item 3/4: the official TypeScript SDK 1.11's organization API against a real
 * gateway with an admin key, unchanged. Every answer is compared field by field with the
 * SDK's own types (node_modules/@anthropic-ai/sdk/resources/organization/**.d.ts and
 * resources/beta/organization/spend-limits/*.d.ts): each field it declares is present with
 * the declared JSON type.
 */
type Kind =
  | 'string'
  | 'string|null'
  | 'number'
  | 'boolean'
  | 'array'
  | 'object'
  | 'object|null'
  | 'array|null';
function expectShape(
  obj: Record<string, unknown>,
  shape: Record<string, Kind>,
  literal: Record<string, unknown> = {},
) {
  for (const [field, kind] of Object.entries(shape)) {
    expect(obj, `field ${field}`).toHaveProperty(field);
    const v = obj[field];
    const t = v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
    expect(kind.split('|'), `${field} is ${t}`).toContain(t);
  }
  expect(obj).toMatchObject(literal);
}
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

// OrganizationInvite (resources/organization/invites.d.ts)
const INVITE: Record<string, Kind> = {
  id: 'string',
  accepted_at: 'string|null',
  email: 'string',
  expires_at: 'string',
  invited_at: 'string',
  rbac_group_ids: 'array',
  role: 'string',
  status: 'string',
  type: 'string',
};
// RBACGroup, RBACGroupMember (resources/organization/rbac-groups/*.d.ts)
const GROUP: Record<string, Kind> = {
  id: 'string',
  created_at: 'string',
  name: 'string',
  role_ids: 'array|null',
  source_type: 'string',
  type: 'string',
  updated_at: 'string',
};
const GROUP_MEMBER: Record<string, Kind> = {
  created_at: 'string',
  email: 'string',
  rbac_group_id: 'string',
  type: 'string',
  user_id: 'string',
};
// ServiceAccount (resources/organization/service-accounts/service-accounts.d.ts)
const SERVICE_ACCOUNT: Record<string, Kind> = {
  id: 'string',
  archived_at: 'string|null',
  archived_by_actor_id: 'string|null',
  created_at: 'string',
  created_by_actor_id: 'string|null',
  description: 'string|null',
  name: 'string',
  organization_role: 'string',
  type: 'string',
  updated_at: 'string',
  updated_by_actor_id: 'string|null',
};
// OrganizationRateLimit (resources/organization/rate-limits.d.ts)
const RATE_LIMIT: Record<string, Kind> = {
  id: 'string',
  group: 'object',
  limits: 'array',
  models: 'array|null',
  type: 'string',
};
// BetaSpendLimit, BetaSpendSummary, BetaSpendLimitIncreaseRequest (resources/beta/organization/spend-limits/*.d.ts)
const SPEND_LIMIT: Record<string, Kind> = {
  id: 'string',
  amount: 'string|null',
  created_at: 'string',
  currency: 'string',
  is_enabled: 'boolean',
  period: 'string',
  scope: 'object',
  type: 'string',
  updated_at: 'string',
};
const SPEND_SUMMARY: Record<string, Kind> = {
  actor: 'object',
  amount: 'string|null',
  currency: 'string',
  period: 'string',
  period_to_date_spend: 'string',
  scope: 'object',
  source: 'object',
  spend_limit_id: 'string',
};
const INCREASE: Record<string, Kind> = {
  id: 'string',
  actor: 'object',
  created_at: 'string',
  period: 'string',
  resolved_at: 'string|null',
  resolved_by: 'object|null',
  spend_summary: 'object|null',
  status: 'string',
  type: 'string',
};
const USER_ACTOR: Record<string, Kind> = {
  deleted: 'boolean',
  email_address: 'string|null',
  name: 'string|null',
  type: 'string',
  user_id: 'string',
};

let stack: Stack;
let acme: SeededAccount;
let client: Anthropic;
const all = async <T>(page: AsyncIterable<T>) => {
  const out: T[] = [];
  for await (const x of page) out.push(x);
  return out;
};

beforeAll(async () => {
  stack = await startStack();
  acme = await stack.seedAccount({ name: 'Org SDK' });
  client = new Anthropic({ apiKey: acme.adminKey, baseURL: stack.gateway.url, maxRetries: 0 });
}, 60_000);
afterAll(() => stack?.close());

async function newMember(email: string) {
  const res = await api(stack.gateway.url, '/v1/organizations/users', {
    key: acme.adminKey,
    body: { email },
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; email: string };
}

describe('the organization API through the official SDK, unchanged', () => {
  it('users and API keys answer as before', async () => {
    const users = await all(client.organization.users.list());
    expect(users.map((u) => u.id)).toContain(acme.adminMemberId);
    const me = await client.organization.users.retrieve(acme.adminMemberId);
    expectShape(
      me as never,
      { id: 'string', email: 'string', name: 'string', role: 'string', type: 'string', added_at: 'string' },
      { type: 'user' },
    );
    const keys = await all(client.organization.apiKeys.list());
    expect(keys.map((k) => k.id)).toContain(acme.adminKeyId);
  });

  it('invites: create, retrieve, list and delete, in the OrganizationInvite shape', async () => {
    const group = await client.organization.rbacGroups.create({ name: 'Invitees' });
    const invite = await client.organization.invites.create({
      email: 'new.person@org-sdk.test',
      role: 'developer',
      rbac_group_ids: [group.id],
    });
    expectShape(invite as never, INVITE, {
      type: 'invite',
      email: 'new.person@org-sdk.test',
      role: 'developer',
      status: 'pending',
      accepted_at: null,
      rbac_group_ids: [group.id],
    });
    expect(invite.invited_at).toMatch(ISO);
    expect(Date.parse(invite.expires_at)).toBeGreaterThan(Date.now());
    expect(await client.organization.invites.retrieve(invite.id)).toEqual(invite);
    expect((await all(client.organization.invites.list())).map((i) => i.id)).toContain(invite.id);
    // A second pending invite for the same address, and an invite of a member, are refused.
    await expect(
      client.organization.invites.create({ email: 'NEW.person@org-sdk.test', role: 'user' }),
    ).rejects.toMatchObject({ status: 400, error: { error: { type: 'invalid_request_error' } } });
    const member = await newMember('already@org-sdk.test');
    await expect(
      client.organization.invites.create({ email: member.email, role: 'user' }),
    ).rejects.toMatchObject({
      status: 400,
    });
    expect(await client.organization.invites.delete(invite.id)).toEqual({
      id: invite.id,
      type: 'invite_deleted',
    });
    await expect(client.organization.invites.retrieve(invite.id)).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
  });

  it('an invite becomes a member, with its groups, when the person signs in with that address', async () => {
    const group = await client.organization.rbacGroups.create({ name: 'Joiners' });
    const invite = await client.organization.invites.create({
      email: 'joiner@org-sdk.test',
      role: 'user',
      rbac_group_ids: [group.id],
    });
    // Adding the member (as a sign-in that provisions one does, through accounts/members.ts) accepts it.
    const member = await newMember('Joiner@org-sdk.test');
    const after = await client.organization.invites.retrieve(invite.id);
    expect(after).toMatchObject({ status: 'accepted' });
    expect(after.accepted_at).toMatch(ISO);
    const members = await all(client.organization.rbacGroups.members.list(group.id));
    expect(members.map((m) => m.user_id)).toEqual([member.id]);
  });

  it('RBAC groups and their members, in the RBACGroup and RBACGroupMember shapes', async () => {
    const dev = await newMember('grouped@org-sdk.test');
    const group = await client.organization.rbacGroups.create({ name: 'Contractors' });
    expectShape(group as never, GROUP, {
      type: 'rbac_group',
      name: 'Contractors',
      source_type: 'direct',
      role_ids: [],
    });
    expect(group.id).toMatch(/^rbacgrp_/);
    const renamed = await client.organization.rbacGroups.update(group.id, { name: 'Contract staff' });
    expect(renamed).toMatchObject({ id: group.id, name: 'Contract staff' });
    expect(await client.organization.rbacGroups.retrieve(group.id)).toEqual(renamed);
    expect((await all(client.organization.rbacGroups.list())).map((g) => g.id)).toContain(group.id);

    const added = await client.organization.rbacGroups.members.add(group.id, { user_id: dev.id });
    expectShape(added as never, GROUP_MEMBER, {
      type: 'rbac_group_member',
      rbac_group_id: group.id,
      user_id: dev.id,
      email: dev.email,
    });
    const listed = await all(client.organization.rbacGroups.members.list(group.id));
    expect(listed).toEqual([added]);
    expect(await client.organization.rbacGroups.members.remove(dev.id, { rbac_group_id: group.id })).toEqual({
      type: 'rbac_group_member_deleted',
      rbac_group_id: group.id,
      user_id: dev.id,
    });
    expect(await all(client.organization.rbacGroups.members.list(group.id))).toEqual([]);
    await expect(
      client.organization.rbacGroups.members.add(group.id, { user_id: 'user_nobody' }),
    ).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    expect(await client.organization.rbacGroups.delete(group.id)).toEqual({
      id: group.id,
      type: 'rbac_group_deleted',
    });
    await expect(client.organization.rbacGroups.retrieve(group.id)).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
  });

  it('a group named after an identity-provider group holds the members whose idp_groups carry it', async () => {
    const dev = await newMember('idp@org-sdk.test');
    await stack.gateway.store.db.sql`update members set idp_groups = '{eng-platform}' where id = ${dev.id}`;
    const res = await api(stack.gateway.url, '/v1/organizations/rbac_groups', {
      key: acme.adminKey,
      body: { name: 'Platform', idp_group: 'eng-platform' },
    });
    const members = await all(client.organization.rbacGroups.members.list(res.body.id));
    expect(members.map((m) => m.user_id)).toEqual([dev.id]);
  });

  it('service accounts: create, update, list, archive (its keys with it)', async () => {
    const sa = await client.organization.serviceAccounts.create({
      name: 'ci-deploy-bot',
      description: 'deploys',
    });
    expectShape(sa as never, SERVICE_ACCOUNT, {
      type: 'service_account',
      name: 'ci-deploy-bot',
      description: 'deploys',
      organization_role: 'developer',
      archived_at: null,
      created_by_actor_id: acme.adminKeyId,
    });
    await expect(
      client.organization.serviceAccounts.create({ name: 'ci-deploy-bot' }),
    ).rejects.toBeInstanceOf(Anthropic.ConflictError);
    const updated = await client.organization.serviceAccounts.update(sa.id, { description: null });
    expect(updated.description).toBe('');
    expect((await all(client.organization.serviceAccounts.list())).map((s) => s.id)).toContain(sa.id);
    // The service account owns a key of its own (an app or CI job's credential).
    const made = await api(stack.gateway.url, `/v1/organizations/service_accounts/${sa.id}/api_keys`, {
      key: acme.adminKey,
      body: { environment: 'ci' },
    });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({
      type: 'api_key',
      service_account_id: sa.id,
      app: 'ci-deploy-bot',
      member_id: null,
    });
    expect((await callModel(stack.gateway.url, made.body.key)).status).toBe(200);
    const archived = await client.organization.serviceAccounts.archive(sa.id);
    await waitFor(async () => (await callModel(stack.gateway.url, made.body.key)).status === 401, {
      timeout: 2_000,
      what: "the archived service account's key to be refused",
    });
    expect(archived.archived_at).toMatch(ISO);
    expect((await client.organization.serviceAccounts.archive(sa.id)).archived_at).toBe(archived.archived_at);
    expect((await all(client.organization.serviceAccounts.list())).map((s) => s.id)).not.toContain(sa.id);
    expect(
      (await all(client.organization.serviceAccounts.list({ include_archived: true }))).map((s) => s.id),
    ).toContain(sa.id);
    await expect(
      client.organization.serviceAccounts.update(sa.id, { description: 'x' }),
    ).rejects.toBeInstanceOf(Anthropic.BadRequestError);
  });

  it("rate limits: Keygate's key limits in the OrganizationRateLimit shape", async () => {
    const res = await api(stack.gateway.url, '/v1/organizations/api_keys', {
      key: acme.adminKey,
      body: { name: 'limited', limits: { requests_per_minute: 60, tokens_per_minute: 40_000 } },
    });
    const limits = await all(client.organization.rateLimits.list());
    const entry = limits.find((l) => l.group.id === res.body.id)!;
    expectShape(entry as never, RATE_LIMIT, { type: 'rate_limit', group: { type: 'model_group' } });
    // Its own two, and the plan's input and output tokens per minute, which it did not set.
    expect(entry.limits).toEqual([
      { type: 'requests_per_minute', value: 60 },
      { type: 'tokens_per_minute', value: 40_000 },
      { type: 'input_tokens_per_minute', value: expect.any(Number) },
      { type: 'output_tokens_per_minute', value: expect.any(Number) },
    ]);
    expect(await all(client.organization.rateLimits.list({ group_type: 'batch' }))).toEqual([]);
  });

  it("rate limits of a member, a group and the account: written, read and removed through the SDK's client", async () => {
    const dev = await newMember('rates@org-sdk.test');
    const group = await client.organization.rbacGroups.create({ name: 'Rated' });
    type Entry = Anthropic.Organization.OrganizationRateLimit & {
      scope: Record<string, unknown>;
      source: string;
    };
    const set = (scope: object, limits: object[]) =>
      client.post<Entry>('/v1/organizations/rate_limits', { body: { scope, limits } });
    const member = await set({ type: 'user', user_id: dev.id }, [
      { type: 'requests_per_minute', value: 30 },
      { type: 'output_tokens_per_minute', value: 20_000 },
    ]);
    const grp = await set({ type: 'rbac_group', rbac_group_id: group.id }, [
      { type: 'input_tokens_per_minute', value: 500_000 },
    ]);
    const org = await set({ type: 'organization' }, [{ type: 'requests_per_minute', value: 100_000 }]);
    for (const e of [member, grp, org])
      expectShape(e as never, RATE_LIMIT, {
        type: 'rate_limit',
        group: { type: 'model_group' },
        models: null,
      });
    const listed = await all(client.organization.rateLimits.list());
    const byId = new Map(listed.map((l) => [l.id, l as Entry]));
    expect(byId.get(member.id)).toMatchObject({
      scope: { type: 'user', user_id: dev.id },
      limits: [
        { type: 'requests_per_minute', value: 30 },
        { type: 'output_tokens_per_minute', value: 20_000 },
      ],
    });
    expect(byId.get(grp.id)!.scope).toEqual({ type: 'rbac_group', rbac_group_id: group.id });
    expect(byId.get(org.id)!.scope).toEqual({ type: 'organization' });
    expect([...byId.values()].filter((e) => e.source === 'plan')).toHaveLength(1);
    expect(await client.get(`/v1/organizations/rate_limits/${grp.id}`)).toEqual(byId.get(grp.id));
    for (const e of [member, grp, org])
      expect(await client.delete(`/v1/organizations/rate_limits/${e.id}`)).toEqual({
        id: e.id,
        type: 'rate_limit_deleted',
      });
    await expect(client.get(`/v1/organizations/rate_limits/${org.id}`)).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
    await expect(
      set({ type: 'user', user_id: dev.id }, [{ type: 'requests_per_minute', value: -1 }]),
    ).rejects.toBeInstanceOf(Anthropic.BadRequestError);
  });

  it('spend limits: set (an upsert on scope and period), retrieve, list, effective, delete', async () => {
    const dev = await newMember('spender@org-sdk.test');
    const group = await client.organization.rbacGroups.create({ name: 'Tight' });
    await client.organization.rbacGroups.members.add(group.id, { user_id: dev.id });
    const org = await client.beta.organization.spendLimits.set({
      scope: { type: 'organization' },
      amount: '50000',
      period: 'monthly',
    });
    expectShape(org as never, SPEND_LIMIT, {
      type: 'spend_limit',
      amount: '50000',
      currency: 'USD',
      is_enabled: true,
      period: 'monthly',
      scope: { type: 'organization' },
    });
    expect(org.id).toMatch(/^spl_/);
    const again = await client.beta.organization.spendLimits.set({
      scope: { type: 'organization' },
      amount: '40000',
      period: 'monthly',
    });
    expect(again).toMatchObject({ id: org.id, amount: '40000' });
    // A group limit (the SDK types `set` for user, organization and workspace scopes; the wire takes rbac_group too).
    const tight = await client.beta.organization.spendLimits.set({
      scope: { type: 'rbac_group', rbac_group_id: group.id } as never,
      amount: '10000',
      period: 'monthly',
    });
    const own = await client.beta.organization.spendLimits.set({
      scope: { type: 'user', user_id: dev.id },
      amount: null,
      period: 'daily',
    });
    expect(own).toMatchObject({ amount: null, scope: { type: 'user', user_id: dev.id }, period: 'daily' });
    expect(await client.beta.organization.spendLimits.retrieve(tight.id)).toEqual(tight);
    const listed = await all(client.beta.organization.spendLimits.list());
    expect(listed.map((l) => l.scope.type)).toEqual(['organization', 'rbac_group', 'user']);
    expect(await all(client.beta.organization.spendLimits.list({ scope_type: ['user'] }))).toEqual([own]);

    const effective = await all(client.beta.organization.spendLimits.effective.list({ user_ids: [dev.id] }));
    for (const row of effective) {
      expectShape(row as never, SPEND_SUMMARY, { currency: 'USD', scope: { type: 'user', user_id: dev.id } });
      expectShape(row.actor as never, USER_ACTOR, {
        type: 'user_actor',
        user_id: dev.id,
        email_address: dev.email,
        deleted: false,
      });
    }
    // Monthly: the tighter of the group's 10000 and the organization's 40000; daily: the explicit no-limit override.
    expect(effective.map((r) => [r.period, r.amount, r.source.type, r.spend_limit_id])).toEqual([
      ['daily', null, 'user', own.id],
      ['monthly', '10000', 'rbac_group', tight.id],
    ]);
    expect(effective[1]!.period_to_date_spend).toBe('0');
    // A key of no member (an app) is a principal of its own under the organization's default.
    const appKey = (
      await api(stack.gateway.url, '/v1/organizations/api_keys', {
        key: acme.adminKey,
        body: { name: 'an app' },
      })
    ).body.id as string;
    const everyone = await all(client.beta.organization.spendLimits.effective.list());
    const forApp = everyone.filter(
      (r) => r.actor.type === 'scoped_api_key_actor' && r.actor.scoped_api_key_id === appKey,
    );
    expect(forApp).toHaveLength(1);
    expectShape(forApp[0] as never, SPEND_SUMMARY, {
      amount: '40000',
      period: 'monthly',
      source: { type: 'organization' },
      spend_limit_id: org.id,
    });
    await expect(
      client.beta.organization.spendLimits.set({
        scope: { type: 'workspace', workspace_id: 'wrkspc_x' },
        amount: '1',
      }),
    ).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    await expect(
      client.beta.organization.spendLimits.set({ scope: { type: 'organization' }, amount: '-5' }),
    ).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    expect(await client.beta.organization.spendLimits.delete(own.id)).toEqual({
      id: own.id,
      type: 'spend_limit_deleted',
    });
    await client.beta.organization.spendLimits.delete(tight.id);
    await client.beta.organization.spendLimits.delete(org.id);
  });

  it('increase requests: list, retrieve, approve (writing the member limit), deny', async () => {
    const dev = await newMember('asker@org-sdk.test');
    const limit = await client.beta.organization.spendLimits.set({
      scope: { type: 'user', user_id: dev.id },
      amount: '100',
      period: 'monthly',
    });
    const store = stack.gateway.store;
    const asked = await store.spendLimits.request({
      accountId: acme.id,
      memberId: dev.id,
      period: 'monthly',
      requestedCents: 500,
      reason: 'a big refactor',
    });
    const second = await store.spendLimits.request({
      accountId: acme.id,
      memberId: dev.id,
      period: 'monthly',
      requestedCents: 900,
      reason: null,
    });

    const pending = await all(
      client.beta.organization.spendLimits.increaseRequests.list({
        status: ['pending'],
        actor_ids: [dev.id],
      }),
    );
    expect(pending.map((r) => r.id)).toEqual([second.id, asked.id]);
    const one = await client.beta.organization.spendLimits.increaseRequests.retrieve(asked.id);
    expectShape(one as never, INCREASE, {
      type: 'spend_limit_increase_request',
      status: 'pending',
      period: 'monthly',
      resolved_at: null,
      resolved_by: null,
    });
    expectShape(one.actor as never, USER_ACTOR, { user_id: dev.id, email_address: dev.email });
    expectShape(one.spend_summary as never, SPEND_SUMMARY, { amount: '100', spend_limit_id: limit.id });

    const approved = await client.beta.organization.spendLimits.increaseRequests.approve(asked.id, {
      amount: '500',
    });
    expectShape(
      approved as never,
      { ...INCREASE, spend_limit: 'object|null' },
      { status: 'approved', spend_summary: null },
    );
    expect(approved.resolved_at).toMatch(ISO);
    expectShape(approved.resolved_by as never, USER_ACTOR, {
      type: 'user_actor',
      user_id: acme.adminMemberId,
    });
    expect(approved.spend_limit).toMatchObject({
      id: limit.id,
      amount: '500',
      scope: { type: 'user', user_id: dev.id },
    });
    expect((await client.beta.organization.spendLimits.retrieve(limit.id)).amount).toBe('500');

    const denied = await client.beta.organization.spendLimits.increaseRequests.deny(second.id, {});
    expect(denied).toMatchObject({ status: 'denied', spend_summary: null });
    // Denying is idempotent on denied; denying an approved request is a 400.
    expect((await client.beta.organization.spendLimits.increaseRequests.deny(second.id, {})).status).toBe(
      'denied',
    );
    await expect(
      client.beta.organization.spendLimits.increaseRequests.deny(asked.id, {}),
    ).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    const events = await store.db.sql<{ type: string }[]>`
      select type from alert_events where account_id = ${acme.id} and type like 'spend_limit.%' order by created_at`;
    expect(events.map((e) => e.type)).toEqual([
      'spend_limit.increase_requested',
      'spend_limit.increase_requested',
      'spend_limit.increase_approved',
      'spend_limit.increase_denied',
    ]);
  });

  it('an app key cannot use any of it', async () => {
    const app = new Anthropic({ apiKey: stack.appKey, baseURL: stack.gateway.url, maxRetries: 0 });
    await expect(app.organization.rbacGroups.create({ name: 'x' })).rejects.toBeInstanceOf(
      Anthropic.AuthenticationError,
    );
    await expect(all(app.beta.organization.spendLimits.list())).rejects.toBeInstanceOf(
      Anthropic.AuthenticationError,
    );
  });
});
