import { Hono } from 'hono';
import { z } from 'zod';
import type { AdminEnv } from '../accounts/scope';
import { connectProvider } from '../identity/connect';
import type { MemberTokens } from '../identity/tokens';
import { GatewayError } from '../lib/errors';
import { operation } from '../lib/operation';
import type { IdentityProviderRecord } from '../store';
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
});

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
    sign_in_path: `/dashboard/sign-in/idp?account=${encodeURIComponent(p.accountId)}`,
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
  };
}

const notConnected = () =>
  new GatewayError('not_found_error', 'This account has not connected an identity provider.');

/** The account's identity provider: connect, read, change, disconnect. The client secret is never shown. */
export function identityRoutes(deps: { identity?: MemberTokens }): Hono<AdminEnv> {
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
      'Connect or change the OIDC identity provider (its issuer is discovered first; the client secret is stored encrypted)',
    body: ConnectProvider,
  });
  app.post('/identity_provider', connect, async (c) => {
    const b = c.req.valid('json');
    const t = tokens();
    const saved = await connectProvider(
      t.deps,
      t.oidc,
      c.var.scope.accountId,
      {
        name: b.name,
        issuer: b.issuer,
        clientId: b.client_id,
        clientSecret: b.client_secret ?? null,
        allowedDomains: b.allowed_domains,
        groupsClaim: b.groups_claim,
        provision: b.provision,
        provisionGroups: b.provision_groups,
      },
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
  return app;
}
