import { GatewayError } from '../lib/errors';
import type { IdentityProviderRecord } from './identity-queries';
import type { IdentityDeps, OidcClients } from './oidc';

export interface ConnectInput {
  name: string;
  issuer: string;
  clientId: string;
  /** Absent on an update that keeps the stored secret. */
  clientSecret: string | null;
  allowedDomains: string[];
  groupsClaim: string;
  provision: 'domain' | 'group';
  provisionGroups: string[];
  /** A first sign-in may take over an existing unbound member with the same verified email. */
  linkExistingMembers: boolean;
}

const secretAgain = () =>
  new GatewayError(
    'invalid_request_error',
    'client_secret: required again when the issuer changes (the stored secret is never sent to another issuer).',
  );
const sameUrl = (a: string, b: string) => a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

/**
 * Connects (or changes) an account's identity provider: the issuer is discovered first, through
 * the egress policy, so a wrong issuer is refused now rather than at someone's first sign-in.
 */
export async function connectProvider(
  deps: IdentityDeps,
  oidc: OidcClients,
  accountId: string,
  input: ConnectInput,
  actor: string,
): Promise<IdentityProviderRecord> {
  const before = await deps.store.identity.provider(accountId);
  // The stored secret is only ever sent to the issuer it was given for: a new issuer needs it again.
  if (before && !input.clientSecret && !sameUrl(before.issuer, input.issuer)) throw secretAgain();
  const secret = input.clientSecret ?? (before ? oidc.secretOf(before) : null);
  if (!secret) throw new GatewayError('invalid_request_error', 'client_secret: Field required');
  if (input.provision === 'group' && input.provisionGroups.length === 0)
    throw new GatewayError(
      'invalid_request_error',
      "provision_groups: name at least one group when provision is 'group'.",
    );
  const config = await oidc.discover(input.issuer, input.clientId, secret);
  const issuer = config.serverMetadata().issuer;
  // Discovery may name an issuer other than the URL typed (a trailing slash, a redirect's target).
  if (before && !input.clientSecret && !sameUrl(before.issuer, issuer)) throw secretAgain();
  return deps.store.identity.saveProvider(
    {
      accountId,
      name: input.name,
      issuer,
      clientId: input.clientId,
      clientSecretSealed: deps.box.seal(secret, { purpose: 'idp-client-secret', row: accountId }),
      allowedDomains: input.allowedDomains.map((d) => d.toLowerCase()),
      groupsClaim: input.groupsClaim,
      provision: input.provision,
      provisionGroups: input.provisionGroups,
      linkExistingMembers: input.linkExistingMembers,
    },
    {
      actor,
      action: before ? 'identity_provider.updated' : 'identity_provider.connected',
      targetId: accountId,
      details: { issuer, client_id: input.clientId, link_existing_members: input.linkExistingMembers },
    },
  );
}
