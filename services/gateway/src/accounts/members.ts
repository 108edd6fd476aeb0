import { GatewayError } from '../lib/errors';
import { newId } from '../lib/ids';
import {
  DuplicateMemberError,
  LastAdminError,
  SeatLimitError,
  type MemberRole,
} from '../tenancy/member-queries';
import type { MemberRecord } from '../tenancy/account-queries';
import type { Scope } from './scope';
import type { ServiceDeps } from './service';

const notFound = (id: string) => new GatewayError('not_found_error', `No member with id '${id}'.`);

/** Translates the store's refusals into answers that say what to do. */
async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof DuplicateMemberError)
      throw new GatewayError(
        'invalid_request_error',
        `email: '${err.message}' is already a member of this account.`,
      );
    if (err instanceof LastAdminError) {
      throw new GatewayError(
        'invalid_request_error',
        "This is the account's last admin: make another member an admin first.",
      );
    }
    if (err instanceof SeatLimitError) {
      throw new GatewayError(
        'invalid_request_error',
        `The ${err.planName} plan has ${err.maxSeats} seat(s), all taken: move the account to the team or scale plan, or remove a member first.`,
      );
    }
    throw err;
  }
}

/** Adds a seat, within the plan's seat limit. */
export async function addMember(
  deps: ServiceDeps,
  scope: Scope,
  input: { email: string; name?: string | null; role: MemberRole },
): Promise<MemberRecord> {
  const id = newId('user');
  const member = await guarded(() =>
    deps.store.members.create(
      {
        id,
        accountId: scope.accountId,
        email: input.email,
        name: input.name ?? input.email,
        role: input.role,
      },
      {
        actor: scope.actor,
        action: 'user.add',
        targetId: id,
        details: { email: input.email, role: input.role },
      },
    ),
  );
  await acceptInvite(deps, scope.accountId, member);
  return member;
}

/**
 * A person who was invited becomes a member: their pending invite (by email) is accepted and
 * its groups become theirs. Called when a member is added, and by sign-in paths that
 * provision members (the identity provider's vouched-for address).
 */
export async function acceptInvite(
  deps: ServiceDeps,
  accountId: string,
  member: Pick<MemberRecord, 'id' | 'email'>,
) {
  return deps.store.invites.acceptFor(accountId, member.email, member.id);
}

export async function updateMember(
  deps: ServiceDeps,
  scope: Scope,
  id: string,
  patch: { name?: string; role?: MemberRole },
): Promise<MemberRecord> {
  const member = await guarded(() =>
    deps.store.members.update(scope.accountId, id, patch, {
      actor: scope.actor,
      action: 'user.update',
      targetId: id,
      details: { ...patch },
    }),
  );
  if (!member) throw notFound(id);
  deps.evict?.invalidateMember(id);
  return member;
}

/** Removes a seat: the member's keys are refused everywhere at once; their usage stays theirs. */
export async function removeMember(deps: ServiceDeps, scope: Scope, id: string): Promise<MemberRecord> {
  const member = await guarded(() =>
    deps.store.members.remove(scope.accountId, id, {
      actor: scope.actor,
      action: 'user.remove',
      targetId: id,
    }),
  );
  if (!member) throw notFound(id);
  deps.evict?.invalidateMember(id);
  return member;
}
