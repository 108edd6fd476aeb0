import type { AccountRecord, ProviderKeyStatus } from '../tenancy/account-queries';
import { GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import type { ForwardCall } from './forward';

const LOG_EVERY_MS = 60_000;

export interface ProviderKeyCheckOptions {
  /** Persists a change of the provider's verdict on the account's key (`sealed` names which key). */
  report(account: AccountRecord, status: ProviderKeyStatus): void;
  logger: Logger;
  clock?: () => number;
}

/**
 * Watches the provider's answers to live calls for a refused provider key (401 or 403).
 *
 * Upstream error bodies pass through unchanged, with this one exception. A 401 from the
 * provider means "the x-api-key is invalid", and that key is the account's, not the
 * client's: passed through, it tells the app (and Claude Code, which then asks the user to
 * log in again) that its own Keygate key is wrong, and nobody looks at the provider key. So
 * the client gets 403 permission_error, as when the account has no provider key at all: its
 * app key is accepted, the account cannot call the provider, and no SDK retries a 403. The
 * message names the cause and who fixes it. A 403 from the provider is answered the same way.
 *
 * The verdict is kept in memory per account and key version and persisted only when it
 * changes, so the hot path costs no database round trip; the log says it once a minute.
 */
export function providerKeyCheck(
  opts: ProviderKeyCheckOptions,
): (call: ForwardCall, status: number) => GatewayError | null {
  const clock = opts.clock ?? Date.now;
  const verdicts = new Map<string, { sealed: string; failing: boolean }>();
  const loggedAt = new Map<string, number>();

  return function checkProviderKey(call, status) {
    const { account, key } = call.principal;
    const sealed = account.providerKeySealed;
    if (key.kind === 'test' || !sealed) return null;
    const refused = status === 401 || status === 403;
    if (!refused && (status < 200 || status >= 300)) return null;
    const known = verdicts.get(account.id);
    const failing =
      known && known.sealed === sealed ? known.failing : account.providerKeyStatus === 'failing';
    if (refused !== failing) {
      verdicts.set(account.id, { sealed, failing: refused });
      opts.report(account, refused ? 'failing' : 'ok');
    }
    if (!refused) return null;
    const now = clock();
    if (now - (loggedAt.get(account.id) ?? -Infinity) >= LOG_EVERY_MS) {
      loggedAt.set(account.id, now);
      opts.logger.warn("the provider refused the account's provider key; an admin must set a new one", {
        accountId: account.id,
        upstreamStatus: status,
        requestId: call.requestId,
      });
    }
    return new GatewayError(
      'permission_error',
      `The provider refused this account's provider key (HTTP ${status} from the provider); your app key is valid. ` +
        'An admin of the account must set a new provider key (operator: `keygate account set-provider-key`).',
    );
  };
}
