import { GatewayError } from '../lib/errors';
import { newId } from '../lib/ids';
import {
  SeatLimitError,
  type IdentityProviderRecord,
  type IdpPerson,
  type MemberRecord,
  type Store,
} from '../store';

/** Whether the account's domain rule lets this address sign in at all. */
export function domainAllowed(idp: IdentityProviderRecord, email: string): boolean {
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  return idp.allowedDomains.length === 0 || idp.allowedDomains.some((d) => d.toLowerCase() === domain);
}

/**
 * The member a person signs in as: an existing member with that email (added by an admin, or on
 * an earlier sign-in), else a new developer when the provisioning rule admits them: by domain
 * (any allowed address) or by group (one of the listed groups in the groups claim).
 */
export async function provisionMember(
  store: Store,
  idp: IdentityProviderRecord,
  person: IdpPerson,
): Promise<MemberRecord> {
  if (!domainAllowed(idp, person.email))
    throw new GatewayError(
      'permission_error',
      `Sign-in refused: ${person.email} is not in this account's allowed email domains.`,
    );
  const existing = await store.identity.memberFor(idp.accountId, person.subject, person.email);
  if (!existing && idp.provision === 'group' && !person.groups.some((g) => idp.provisionGroups.includes(g)))
    throw new GatewayError(
      'permission_error',
      `Sign-in refused: ${person.email} is in none of the groups this account provisions (${idp.provisionGroups.join(', ') || 'none set'}).`,
    );
  try {
    const { member } = await store.identity.provision(idp.accountId, person, newId('user'), {
      actor: 'idp',
      action: 'member.provisioned',
      targetId: null,
      details: { email: person.email, issuer: idp.issuer },
    });
    // A person invited by email becomes the member of their invite, with its groups.
    await store.invites.acceptFor(idp.accountId, member.email, member.id);
    return member;
  } catch (err) {
    if (err instanceof SeatLimitError)
      throw new GatewayError(
        'permission_error',
        `Sign-in refused: every seat of the ${err.planName} plan is taken; ask an account admin.`,
      );
    throw err;
  }
}
