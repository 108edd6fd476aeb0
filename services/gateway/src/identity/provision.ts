import { GatewayError } from '../lib/errors';
import { newId } from '../lib/ids';
import { IdentityLinkError, type IdentityProviderRecord, type IdpPerson } from './identity-queries';
import { SeatLimitError } from '../tenancy/member-queries';
import type { MemberRecord } from '../tenancy/account-queries';
import type { MemberTokenStore } from './oidc';

/** Whether the account's domain rule lets this address sign in at all. */
export function domainAllowed(idp: IdentityProviderRecord, email: string): boolean {
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  return idp.allowedDomains.length === 0 || idp.allowedDomains.some((d) => d.toLowerCase() === domain);
}

const LINK_REFUSALS: Record<
  IdentityLinkError['reason'],
  (p: IdpPerson, idp: IdentityProviderRecord) => string
> = {
  bound: (p) =>
    `Sign-in refused: the member ${p.email} is already linked to another person at this identity provider.`,
  unverified: (p) =>
    `Sign-in refused: a member with ${p.email} exists, and the identity provider did not assert that this address is verified.`,
  'not-linkable': (p) =>
    `Sign-in refused: a member with ${p.email} exists and has not signed in with this identity provider before; an account admin allows linking existing members (link_existing_members) or removes and invites them.`,
  'not-provisioned': (p, idp) =>
    `Sign-in refused: ${p.email} is in none of the groups this account provisions (${idp.provisionGroups.join(', ') || 'none set'}).`,
};

/**
 * The member a person signs in as: the member bound to their (issuer, subject); on a first
 * sign-in, a member the provider's SCIM client created (or, where the account allows linking, any
 * member not yet bound) with the same verified email; else a new developer when the provisioning
 * rule admits them: by domain (any allowed address) or by group (one of the listed groups).
 * An invite for the address is accepted only for a verified email.
 */
export async function provisionMember(
  store: Pick<MemberTokenStore, 'identity' | 'invites'>,
  idp: IdentityProviderRecord,
  person: IdpPerson,
): Promise<MemberRecord> {
  if (!domainAllowed(idp, person.email))
    throw new GatewayError(
      'permission_error',
      `Sign-in refused: ${person.email} is not in this account's allowed email domains.`,
    );
  const mayCreate = idp.provision === 'domain' || person.groups.some((g) => idp.provisionGroups.includes(g));
  try {
    const { member } = await store.identity.provision(
      idp,
      person,
      { id: newId('user'), mayCreate },
      {
        actor: 'idp',
        action: 'member.provisioned',
        targetId: null,
        details: { email: person.email, issuer: idp.issuer },
      },
    );
    // A person invited by email becomes the member of their invite, with its groups.
    if (person.emailVerified) await store.invites.acceptFor(idp.accountId, member.email, member.id);
    return member;
  } catch (err) {
    if (err instanceof IdentityLinkError)
      throw new GatewayError('permission_error', LINK_REFUSALS[err.reason](person, idp));
    if (err instanceof SeatLimitError)
      throw new GatewayError(
        'permission_error',
        `Sign-in refused: every seat of the ${err.planName} plan is taken; ask an account admin.`,
      );
    throw err;
  }
}
