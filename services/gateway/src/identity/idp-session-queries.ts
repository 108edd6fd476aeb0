import { writeAudit, type AuditEntry } from '../tenancy/audit-queries';
import { inTransaction, type Sql } from '../store/database';
import { invalidate } from '../store/invalidations';
import { insertKey, type KeyRecord, type NewKey } from '../tenancy/key-queries';
import { guardLastAdmin, LastAdminError } from '../tenancy/member-queries';

export interface IdpSessionRecord {
  id: string;
  accountId: string;
  memberId: string;
  keyId: string;
  providerRefreshSealed: string | null;
  subject: string;
}

/** What a refresh's `work` decided. */
export type RefreshOutcome<T> =
  | {
      kind: 'renew';
      providerRefreshSealed: string | null;
      /** Keygate's next refresh token (hash): the one presented is spent. */
      refreshHash: Buffer;
      hash: Buffer;
      hint: string;
      expiresAt: Date;
      graceMs: number;
      value: T;
      /** `value` sealed, kept with the spent token for the reuse window. */
      answerSealed: string;
    }
  | { kind: 'deprovision'; audit: AuditEntry }
  | { kind: 'end'; reason: string };

/** Why a refresh gave no token: the caller words the 401. */
export type RefreshRefusal =
  | 'unknown'
  | 'reused'
  | 'idle'
  | 'removed'
  | 'ended'
  | 'deprovisioned'
  /** The provider refused, but the member was kept (the account's last admin). */
  | 'provider-refused';

/**
 * Ends a member's access at once: the seat is removed (its keys, member tokens included, are
 * refused everywhere through the invalidation), device sessions end, dashboard sessions go.
 * Never the account's last active admin (LastAdminError): an account must keep someone to run it.
 */
export async function deprovision(
  t: Sql,
  accountId: string,
  memberId: string,
  audit: AuditEntry,
): Promise<boolean> {
  await guardLastAdmin(t, accountId, memberId);
  const rows = await t`
    update members set status = 'removed', removed_at = now(), removed_by = 'identity'
    where account_id = ${accountId} and id = ${memberId} and status = 'active' returning id`;
  await t`update idp_sessions set ended_at = now() where member_id = ${memberId} and ended_at is null`;
  await t`delete from dashboard_sessions where member_id = ${memberId}`;
  if (rows.length === 0) return false;
  await writeAudit(t, accountId, audit);
  await invalidate(t, `member:${memberId}`);
  return true;
}

const sessionCols = (sql: Sql, table = 'idp_sessions') => sql`
  ${sql(table)}.id, ${sql(table)}.account_id as "accountId", ${sql(table)}.member_id as "memberId",
  ${sql(table)}.key_id as "keyId", ${sql(table)}.provider_refresh_sealed as "providerRefreshSealed",
  ${sql(table)}.subject`;

/** Ends one session and its member token at once (the token's secrets go, every instance is told). */
async function endSession(t: Sql, s: { id: string; keyId: string }): Promise<void> {
  await t`update idp_sessions set ended_at = now() where id = ${s.id} and ended_at is null`;
  await t`delete from key_secrets where key_id = ${s.keyId}`;
  await invalidate(t, `key:${s.keyId}`);
}

/**
 * Device sessions of `keygate token`: Keygate's refresh token (hash only) stands for the
 * provider's (sealed). Keygate's refresh token rotates on every use and ends after an idle time;
 * a spent one presented again ends its whole session (RFC 9700 §4.14.2, read 2026-11-29).
 */
export function idpSessionQueries(sql: Sql) {
  return {
    /** A device session and its first member token (a key that expires), together. */
    async startSession(
      s: Omit<IdpSessionRecord, 'keyId'> & { refreshHash: Buffer },
      key: NewKey,
      keyHash: Buffer,
    ): Promise<KeyRecord> {
      return inTransaction(sql, async (t) => {
        const row = await insertKey(t, key, keyHash);
        await t`
          insert into idp_sessions (id, account_id, member_id, key_id, refresh_hash, provider_refresh_sealed, subject)
          values (${s.id}, ${s.accountId}, ${s.memberId}, ${row.id}, ${s.refreshHash}, ${s.providerRefreshSealed}, ${s.subject})`;
        return row;
      });
    },

    /**
     * Refreshes one device session, one refresh at a time (the row is locked while `work` asks the
     * provider: two refreshes racing with one rotating provider token would look like a replay).
     */
    async refreshSession<T>(
      refreshHash: Buffer,
      idleMs: number,
      reuseWindowMs: number,
      work: (s: IdpSessionRecord) => Promise<RefreshOutcome<T>>,
    ): Promise<
      | { session: IdpSessionRecord; value: T }
      | { session: IdpSessionRecord; answerSealed: string }
      | { refused: RefreshRefusal; reason?: string }
    > {
      return inTransaction(sql, async (t) => {
        const [s] = await t<(IdpSessionRecord & { memberStatus: string; idle: boolean })[]>`
          select ${sessionCols(t)}, (select status from members m where m.id = idp_sessions.member_id) as "memberStatus",
            refreshed_at < now() - make_interval(secs => ${idleMs / 1000}) as idle
          from idp_sessions where refresh_hash = ${refreshHash} and ended_at is null for update`;
        if (!s) return replayed(t, refreshHash, reuseWindowMs);
        if (s.memberStatus !== 'active') return { refused: 'removed' };
        if (s.idle) {
          await endSession(t, s);
          return { refused: 'idle' };
        }
        const outcome = await work(s);
        if (outcome.kind === 'deprovision') {
          try {
            await deprovision(t, s.accountId, s.memberId, outcome.audit);
            return { refused: 'deprovisioned' };
          } catch (err) {
            if (!(err instanceof LastAdminError)) throw err;
            // The account's last admin keeps the seat; this device's sign-in still ends.
            await endSession(t, s);
            await writeAudit(t, s.accountId, { ...outcome.audit, action: 'member.deprovision_refused' });
            return { refused: 'provider-refused' };
          }
        }
        if (outcome.kind === 'end') {
          await endSession(t, s);
          return { refused: 'ended', reason: outcome.reason };
        }
        await t`
          insert into idp_refresh_spent (hash, session_id, answer_sealed)
          values (${refreshHash}, ${s.id}, ${outcome.answerSealed})`;
        await t`delete from idp_refresh_spent where session_id = ${s.id} and spent_at < now() - make_interval(secs => ${idleMs / 1000})`;
        await t`
          update idp_refresh_spent set answer_sealed = null
          where session_id = ${s.id} and answer_sealed is not null and spent_at < now() - make_interval(secs => ${reuseWindowMs / 1000})`;
        await t`
          update idp_sessions set refreshed_at = now(), refresh_hash = ${outcome.refreshHash},
            provider_refresh_sealed = coalesce(${outcome.providerRefreshSealed}, provider_refresh_sealed)
          where id = ${s.id}`;
        await t`update api_keys set hint = ${outcome.hint}, expires_at = ${outcome.expiresAt} where id = ${s.keyId}`;
        // The previous token stays good for a short grace (a call Claude Code is retrying with it).
        await t`
          update key_secrets set expires_at = least(coalesce(expires_at, 'infinity'), clock_timestamp() + make_interval(secs => ${outcome.graceMs / 1000}))
          where key_id = ${s.keyId}`;
        await t`delete from key_secrets where key_id = ${s.keyId} and expires_at < now() - interval '1 hour'`;
        await t`insert into key_secrets (hash, key_id) values (${outcome.hash}, ${s.keyId})`;
        await invalidate(t, `key:${s.keyId}`);
        return { session: s, value: outcome.value };
      });
    },

    /** Open device sessions of a member. */
    async openSessions(memberId: string): Promise<IdpSessionRecord[]> {
      return sql<IdpSessionRecord[]>`
        select ${sessionCols(sql)} from idp_sessions where member_id = ${memberId} and ended_at is null`;
    },
  };
}

/**
 * A spent refresh token presented again. Within the reuse window, and while it is the session's
 * latest spent token, it gets the answer its first use got (a second Claude Code window racing the
 * first); otherwise the session it belonged to ends, token and all.
 */
async function replayed(
  t: Sql,
  refreshHash: Buffer,
  reuseWindowMs: number,
): Promise<{ session: IdpSessionRecord; answerSealed: string } | { refused: RefreshRefusal }> {
  const [spent] = await t<
    (IdpSessionRecord & { open: boolean; answerSealed: string | null; latest: boolean; recent: boolean })[]
  >`
    select ${sessionCols(t, 's')}, s.ended_at is null as open, x.answer_sealed as "answerSealed",
      not exists (select 1 from idp_refresh_spent y where y.session_id = x.session_id and y.spent_at > x.spent_at) as latest,
      x.spent_at > now() - make_interval(secs => ${reuseWindowMs / 1000}) as recent
    from idp_refresh_spent x join idp_sessions s on s.id = x.session_id where x.hash = ${refreshHash} for update of s`;
  if (!spent) return { refused: 'unknown' };
  const { open, answerSealed, latest, recent, ...session } = spent;
  if (open && answerSealed && latest && recent) return { session, answerSealed };
  if (open) {
    await endSession(t, spent);
    await writeAudit(t, spent.accountId, {
      actor: 'idp',
      action: 'idp_session.revoked',
      targetId: spent.memberId,
      details: { session: spent.id, reason: 'a spent refresh token was presented again' },
    });
  }
  return { refused: 'reused' };
}
