import type { Principal } from '../auth/resolver';
import { GatewayError } from '../lib/errors';
import type { ObjectKind, ObjectOwner, objectQueries } from './object-queries';

export type Objects = ReturnType<typeof objectQueries>;

import type { RefKind } from '../pipeline/body-rules';

export type { RefKind };

const NOUN: Record<RefKind, string> = {
  file: 'File',
  batch: 'Message batch',
  skill: 'Skill',
  session: 'Session',
  agent: 'Agent',
  environment: 'Environment',
  vault: 'Vault',
};

/**
 * Admins see every object of their account; a member sees what their keys made; a key of no
 * member sees what it made itself. Objects made outside Keygate have no owner: admins only.
 */
export function canSee(p: Principal, owner: ObjectOwner | undefined): boolean {
  if (p.memberRole === 'admin') return true;
  // A test key's objects live in Keygate's emulator, a live key's with the provider: neither
  // kind of key reaches the other's, as neither lists them.
  if (!owner || owner.live !== (p.key.kind !== 'test')) return false;
  if (p.key.memberId) return owner.memberId === p.key.memberId;
  return owner.memberId === null && owner.keyId === p.key.id;
}

const OBJECT_ID = /^[\x21-\x7e]{1,256}$/;

/** Provider ids are short visible ASCII: anything else (a NUL, a control character) names no object. */
export const isObjectId = (id: string): boolean => OBJECT_ID.test(id);

/** Another member's object answers exactly like a missing one: the provider's 404. */
export function notFound(kind: RefKind, id: string): GatewayError {
  return new GatewayError('not_found_error', `${NOUN[kind]} not found: ${id}`);
}

export async function assertVisible(
  objects: Objects,
  p: Principal,
  kind: ObjectKind,
  id: string,
): Promise<void> {
  // Not an id: answers like a missing object before it reaches a query.
  if (!isObjectId(id)) throw notFound(kind, id.replace(/[^\x21-\x7e]/g, '?'));
  if (p.memberRole === 'admin') return;
  const owners = await objects.owners(p.key.accountId, [id]);
  if (!canSee(p, owners.get(id))) throw notFound(kind, id);
}

/** Who made an object, and the account upstream it was made on (`upstreamId`, null for the provider key). */
export function ownerOf(
  p: Principal,
  kind: ObjectKind,
  id: string,
  groupId: string | null,
  upstreamId: string | null = null,
): ObjectOwner {
  return {
    id,
    kind,
    keyId: p.key.id,
    memberId: p.key.memberId,
    groupId,
    upstreamId,
    live: p.key.kind !== 'test',
  };
}
