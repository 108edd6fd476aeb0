import { GatewayError } from '../lib/errors';
import type { AccountRecord } from '../tenancy/account-queries';
import type { AccountViewer, DashboardDeps } from './env';

/** Who may change keys from the dashboard, and which: what the pages show and the routes enforce. */
export interface KeyRights {
  accountId: string;
  actor: string;
  /** Set for a member managing their own keys: new keys are theirs, and only theirs can be revoked. */
  ownMemberId: string | null;
  canRotate: boolean;
}

/** The viewer's rights over keys, or null: admins have them all, members their own when the account allows it. */
export function keyRights(viewer: AccountViewer, account: AccountRecord | null): KeyRights | null {
  if (viewer.kind === 'admin')
    return viewer.readOnly
      ? null
      : { accountId: viewer.accountId, actor: viewer.keyId, ownMemberId: null, canRotate: true };
  if (account?.membersManageOwnKeys)
    return {
      accountId: viewer.accountId,
      actor: viewer.keyId,
      ownMemberId: viewer.memberId,
      canRotate: false,
    };
  return null;
}

/** The rights to change keys (and, given a key, that key), or the refusal: a member never learns of others' keys. */
export async function requireKeyRights(
  deps: DashboardDeps,
  viewer: AccountViewer,
  account: AccountRecord | null,
  keyId?: string,
): Promise<KeyRights> {
  const rights = keyRights(viewer, account);
  if (!rights) {
    const why =
      viewer.kind === 'member'
        ? 'this account does not let members manage their own keys'
        : 'this is a read-only view';
    throw new GatewayError('permission_error', `You cannot change keys here: ${why}.`);
  }
  if (keyId && rights.ownMemberId) {
    const key = await deps.store.keys.get(rights.accountId, keyId);
    if (!key || key.memberId !== rights.ownMemberId)
      throw new GatewayError('not_found_error', `No key '${keyId}' here.`);
  }
  return rights;
}
