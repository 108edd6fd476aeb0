import { GatewayError } from '../lib/errors';
import { looksLikeProviderKey, parseKey, type KeyKind } from './keys';
import type { Principal } from './resolver';

const SEND_INSTEAD =
  "send your Keygate app key as 'Authorization: Bearer kg_live_…' (or kg_test_… for the built-in emulator)";

/** The kind of a presented key (one of `allowed`), or the provider-shaped error that explains what to send. */
export function presentedKind(token: string | undefined, allowed: readonly KeyKind[]): KeyKind {
  if (!token) throw new GatewayError('authentication_error', `Missing app key: ${SEND_INSTEAD}.`);
  if (looksLikeProviderKey(token)) {
    throw new GatewayError(
      'authentication_error',
      `This is an Anthropic API key. Keygate never takes provider keys from clients: ${SEND_INSTEAD}; the gateway adds the account's provider key itself.`,
    );
  }
  const kind = parseKey(token);
  if (!kind)
    throw new GatewayError(
      'authentication_error',
      `Invalid app key: not a Keygate key. ${capitalize(SEND_INSTEAD)}.`,
    );
  if (!allowed.includes(kind)) {
    throw new GatewayError(
      'authentication_error',
      kind === 'admin'
        ? `Admin keys (kg_admin_…) manage an account and cannot call models: ${SEND_INSTEAD}.`
        : "App keys cannot use the account API: send an admin key (kg_admin_…) as 'x-api-key'.",
    );
  }
  return kind;
}

/** Refuses a found key that may not call now: deactivated, expired, its member or account gone. */
export function checkActive(p: Principal, now: number, onRetiredSecret?: (p: Principal) => void): void {
  if (p.key.status !== 'active')
    throw new GatewayError(
      'authentication_error',
      `This key is ${p.key.status === 'inactive' ? 'deactivated' : 'archived'}: ask an account admin for an active key.`,
    );
  if (p.key.expiresAt && p.key.expiresAt.getTime() <= now)
    throw new GatewayError(
      'authentication_error',
      'This key has expired: ask an account admin for a new one.',
    );
  if (p.secretExpiresAt && p.secretExpiresAt.getTime() <= now) {
    onRetiredSecret?.(p);
    throw new GatewayError(
      'authentication_error',
      'This key was rotated and its old secret has expired: use the new secret.',
    );
  }
  if (!p.memberActive)
    throw new GatewayError(
      'authentication_error',
      "This key's member was removed from the account: ask an account admin for a key of your own.",
    );
  if (p.key.kind === 'admin' && p.memberRole === 'developer') {
    throw new GatewayError(
      'permission_error',
      'This admin key belongs to a member who is no longer an admin: ask an account admin to restore the role or issue you a key.',
    );
  }
  if (p.account.status !== 'active')
    throw new GatewayError('permission_error', 'This account is suspended. Contact your Keygate operator.');
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
