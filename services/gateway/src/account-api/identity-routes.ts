import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import { type ConnectInput, connectProvider } from '../identity/connect';
import type { MemberTokens } from '../identity/tokens';
import { GatewayError } from '../lib/errors';
import { operation } from '../lib/operation';
import type { IdentityProviderRecord } from '../identity/identity-queries';
import type { ScimQueries, ScimTokenRecord } from '../identity-api/scim-queries';
import { scimTokenHash } from '../identity-api/scim-routes';
import { newId, randomBase62 } from '../lib/ids';
import { name } from './schemas';

const domain = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9.-]+\.[a-z]{2,}$/, 'must be a domain name such as example.com');
const group = z.string().trim().min(1).max(200);

export const ConnectProvider = z.strictObject({
  name: name.describe('shown on the sign-in button: "Sign in with <name>"'),
  issuer: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048),
  client_id: z.string().trim().min(1).max(500),
  client_secret: z.string().min(1).max(2000).optional(),
  allowed_domains: z.array(domain).max(100).default([]),
  groups_claim: z.string().trim().min(1).max(200).default('groups'),
  provision: z.enum(['domain', 'group']).default('domain'),
  provision_groups: z.array(group).max(100).default([]),
  link_existing_members: z
    .boolean()
    .default(false)
    .describe(
      'a first sign-in may take over an existing member not yet linked, when the provider asserts email_verified: true',
    ),
});

/** The account API's (and the dashboard form's) fields, as `connectProvider` takes them. */
export function connectInput(b: z.infer<typeof ConnectProvider>): ConnectInput {
  return {
    name: b.name,
    issuer: b.issuer,
    clientId: b.client_id,
    clientSecret: b.client_secret ?? null,
    allowedDomains: b.allowed_domains,
    groupsClaim: b.groups_claim,
    provision: b.provision,
    provisionGroups: b.provision_groups,
    linkExistingMembers: b.link_existing_members,
  };
}

export function identityProviderJson(p: IdentityProviderRecord) {
  return {
    type: 'identity_provider' as const,
    name: p.name,
    issuer: p.issuer,
    client_id: p.clientId,
    client_secret_set: true,
    allowed_domains: p.allowedDomains,
    groups_claim: p.groupsClaim,
    provision: p.provision,
    provision_groups: p.provisionGroups,
    link_existing_members: p.linkExistingMembers,
    sign_in_path: `/dashboard/sign-in/idp?account=${encodeURIComponent(p.accountId)}`,
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
  };
}

const notConnected = () =>
  new GatewayError('not_found_error', 'This account has not connected an identity provider.');

/** The account's identity provider: connect, read, change, disconnect. The client secret is never shown. */
/** The SCIM tokens of an account (identity's queries): the account API issues and revokes them. */
export type ScimTokens = Pick<ScimQueries, 'createToken' | 'tokens' | 'revokeToken'>;

export function identityRoutes(deps: { identity?: MemberTokens; scimTokens: ScimTokens }): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  const tag = 'Identity provider';
  const tokens = () => {
    if (!deps.identity)
      throw new GatewayError(
        'api_error',
        'Sign-in through an identity provider is not set up on this gateway.',
      );
    return deps.identity;
  };

  app.get(
    '/identity_provider',
    operation({ tag, summary: "The account's OIDC identity provider" }),
    async (c) => {
      const p = await tokens().store.identity.provider(c.var.scope.accountId);
      if (!p) throw notConnected();
      return c.json(identityProviderJson(p));
    },
  );

  const connect = operation({
    tag,
    summary:
      'Connect or change the OIDC identity provider (its issuer is discovered first; the client secret is stored encrypted, and needed again for a new issuer)',
    body: ConnectProvider,
  });
  app.post('/identity_provider', connect, async (c) => {
    const b = c.req.valid('json');
    const t = tokens();
    const saved = await connectProvider(
      t.deps,
      t.oidc,
      c.var.scope.accountId,
      connectInput(b),
      c.var.scope.actor,
    );
    return c.json(identityProviderJson(saved));
  });

  app.delete(
    '/identity_provider',
    operation({ tag, summary: 'Disconnect the identity provider: its device sessions stop refreshing' }),
    async (c) => {
      const { accountId, actor } = c.var.scope;
      const removed = await tokens().store.identity.removeProvider(accountId, {
        actor,
        action: 'identity_provider.disconnected',
        targetId: accountId,
      });
      if (!removed) throw notConnected();
      return c.json({ type: 'identity_provider_deleted' as const });
    },
  );

  const scimTag = 'SCIM tokens';
  const tokenJson = (t: ScimTokenRecord) => ({
    type: 'scim_token' as const,
    id: t.id,
    hint: t.hint,
    created_at: t.createdAt.toISOString(),
  });
  app.post(
    '/scim_tokens',
    operation({
      tag: scimTag,
      summary: "A bearer token for the identity provider's SCIM 2.0 client (`/scim/v2`); shown once",
      status: 201,
    }),
    async (c) => {
      const { accountId, actor } = c.var.scope;
      const token = `kgscim_${randomBase62(40)}`;
      const row = await deps.scimTokens.createToken(
        { id: newId('scimtok'), accountId, hint: `kgscim_…${token.slice(-4)}` },
        scimTokenHash(token),
        { actor, action: 'scim_token.created', targetId: null },
      );
      return c.json({ ...tokenJson(row), token }, 201);
    },
  );
  app.get('/scim_tokens', operation({ tag: scimTag, summary: "The account's live SCIM tokens" }), async (c) =>
    c.json({ data: (await deps.scimTokens.tokens(c.var.scope.accountId)).map(tokenJson) }),
  );
  app.delete(
    '/scim_tokens/:token_id',
    operation({ tag: scimTag, summary: 'Revoke a SCIM token at once' }),
    async (c) => {
      const { accountId, actor } = c.var.scope;
      const id = c.req.param('token_id');
      if (
        !(await deps.scimTokens.revokeToken(accountId, id, {
          actor,
          action: 'scim_token.revoked',
          targetId: id,
        }))
      )
        throw new GatewayError('not_found_error', `No SCIM token '${id}'.`);
      return c.json({ type: 'scim_token_deleted' as const, id });
    },
  );
  return app;
}
