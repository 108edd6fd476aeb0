import type { MemberRecord } from './accounts';
import { writeAudit, type AuditEntry } from './audit';
import { inTransaction, type Sql } from './database';
import { invalidate } from './invalidations';
import { insertKey, type KeyRecord, type NewKey } from './keys';
import { guardSeats, insertMember, memberCols } from './members';

/** An account's OIDC identity provider; the client secret stays sealed here. */
export interface IdentityProviderRecord {
  accountId: string;
  name: string;
  issuer: string;
  clientId: string;
  clientSecretSealed: string;
  allowedDomains: string[];
  groupsClaim: string;
  provision: 'domain' | 'group';
  provisionGroups: string[];
  createdAt: Date;
  updatedAt: Date;
}

export type IdentityProviderInput = Omit<IdentityProviderRecord, 'createdAt' | 'updatedAt'>;

/** What the provider said about a person at sign-in or refresh. */
export interface IdpPerson {
  subject: string;
  email: string;
  name: string;
  groups: string[];
}

export interface IdpSessionRecord {
  id: string;
  accountId: string;
  memberId: string;
  keyId: string;
  providerRefreshSealed: string | null;
  subject: string;
}

const idpCols = (sql: Sql) => sql`
  account_id as "accountId", name, issuer, client_id as "clientId", client_secret_sealed as "clientSecretSealed",
  allowed_domains as "allowedDomains", groups_claim as "groupsClaim", provision, provision_groups as "provisionGroups",
  created_at as "createdAt", updated_at as "updatedAt"`;

const sessionCols = (sql: Sql) => sql`
  id, account_id as "accountId", member_id as "memberId", key_id as "keyId",
  provider_refresh_sealed as "providerRefreshSealed", subject`;

/**
 * Ends a member's access at once: the seat is removed (its keys, member tokens included, are
 * refused everywhere through the invalidation), device sessions end, dashboard sessions go.
 * Unlike an admin's removal it has no last-admin guard: the identity provider has the last word.
 */
async function deprovision(t: Sql, accountId: string, memberId: string, audit: AuditEntry): Promise<boolean> {
  const rows = await t`
    update members set status = 'removed', removed_at = now()
    where account_id = ${accountId} and id = ${memberId} and status = 'active' returning id`;
  await t`update idp_sessions set ended_at = now() where member_id = ${memberId} and ended_at is null`;
  await t`delete from dashboard_sessions where member_id = ${memberId}`;
  if (rows.length === 0) return false;
  await writeAudit(t, accountId, audit);
  await invalidate(t, `member:${memberId}`);
  return true;
}

export function identityQueries(sql: Sql) {
  return {
    async provider(accountId: string): Promise<IdentityProviderRecord | null> {
      const [row] = await sql<IdentityProviderRecord[]>`
        select ${idpCols(sql)} from identity_providers where account_id = ${accountId}`;
      return row ?? null;
    },

    async saveProvider(p: IdentityProviderInput, audit: AuditEntry): Promise<IdentityProviderRecord> {
      return inTransaction(sql, async (t) => {
        const [row] = await t<IdentityProviderRecord[]>`
          insert into identity_providers (account_id, name, issuer, client_id, client_secret_sealed, allowed_domains,
            groups_claim, provision, provision_groups)
          values (${p.accountId}, ${p.name}, ${p.issuer}, ${p.clientId}, ${p.clientSecretSealed}, ${p.allowedDomains},
            ${p.groupsClaim}, ${p.provision}, ${p.provisionGroups})
          on conflict (account_id) do update set name = excluded.name, issuer = excluded.issuer,
            client_id = excluded.client_id, client_secret_sealed = excluded.client_secret_sealed,
            allowed_domains = excluded.allowed_domains, groups_claim = excluded.groups_claim,
            provision = excluded.provision, provision_groups = excluded.provision_groups, updated_at = now()
          returning ${idpCols(t)}`;
        await writeAudit(t, p.accountId, audit);
        return row!;
      });
    },

    async removeProvider(accountId: string, audit: AuditEntry): Promise<boolean> {
      return inTransaction(sql, async (t) => {
        const rows =
          await t`delete from identity_providers where account_id = ${accountId} returning account_id`;
        if (rows.length) await writeAudit(t, accountId, audit);
        return rows.length > 0;
      });
    },

    /**
     * The member a signed-in person is: found by email (an invited or earlier member) or added as a
     * developer within the plan's seats; their groups claim and subject are kept current.
     */
    async provision(
      accountId: string,
      person: IdpPerson,
      newId: string,
      audit: AuditEntry,
    ): Promise<{ member: MemberRecord; created: boolean }> {
      return inTransaction(sql, async (t) => {
        const [found] = await t<MemberRecord[]>`
          update members t set idp_groups = ${person.groups}, idp_subject = ${person.subject}
          where t.id = (
            select m.id from members m
            where m.account_id = ${accountId} and m.status = 'active'
              and (m.idp_subject = ${person.subject} or lower(m.email) = lower(${person.email}))
            order by (m.idp_subject = ${person.subject}) desc nulls last limit 1)
          returning ${memberCols(t)}`;
        // Found by the provider's subject first: a person whose email changed there stays the same member.
        if (found) return { member: found, created: false };
        await guardSeats(t, accountId);
        const member = await insertMember(t, {
          id: newId,
          accountId,
          email: person.email,
          name: person.name,
          role: 'developer',
        });
        await t`update members set idp_groups = ${person.groups}, idp_subject = ${person.subject} where id = ${member.id}`;
        await writeAudit(t, accountId, audit);
        return { member, created: true };
      });
    },

    async setGroups(memberId: string, groups: string[]): Promise<void> {
      await sql`update members set idp_groups = ${groups} where id = ${memberId}`;
    },

    async groupsOf(memberId: string): Promise<string[]> {
      const [row] = await sql<{ g: string[] }[]>`select idp_groups as g from members where id = ${memberId}`;
      return row?.g ?? [];
    },

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
     * `work` answers a new token to issue, or a reason to deprovision the member.
     */
    async refreshSession<T>(
      refreshHash: Buffer,
      work: (s: IdpSessionRecord) => Promise<
        | {
            kind: 'renew';
            providerRefreshSealed: string | null;
            hash: Buffer;
            hint: string;
            expiresAt: Date;
            graceMs: number;
            value: T;
          }
        | { kind: 'deprovision'; audit: AuditEntry; value: T }
        | { kind: 'keep'; value: T }
      >,
    ): Promise<{ session: IdpSessionRecord; value: T } | null> {
      return inTransaction(sql, async (t) => {
        const [s] = await t<(IdpSessionRecord & { memberStatus: string })[]>`
          select ${sessionCols(t)}, (select status from members m where m.id = idp_sessions.member_id) as "memberStatus"
          from idp_sessions where refresh_hash = ${refreshHash} and ended_at is null for update`;
        if (s?.memberStatus !== 'active') return null;
        const outcome = await work(s);
        if (outcome.kind === 'deprovision') await deprovision(t, s.accountId, s.memberId, outcome.audit);
        else if (outcome.kind === 'renew') {
          await t`
            update idp_sessions set refreshed_at = now(),
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
        }
        return { session: s, value: outcome.value };
      });
    },

    /** Provider refresh tokens of a member's open device sessions (to revoke them at the provider). */
    async openSessions(memberId: string): Promise<IdpSessionRecord[]> {
      return sql<IdpSessionRecord[]>`
        select ${sessionCols(sql)} from idp_sessions where member_id = ${memberId} and ended_at is null`;
    },

    async deprovision(accountId: string, memberId: string, audit: AuditEntry): Promise<boolean> {
      return inTransaction(sql, (t) => deprovision(t, accountId, memberId, audit));
    },

    /** An active member by the provider's subject, else by email. */
    async memberFor(accountId: string, subject: string, email: string): Promise<MemberRecord | null> {
      const [row] = await sql<MemberRecord[]>`
        select ${memberCols(sql)} from members t
        where t.account_id = ${accountId} and t.status = 'active'
          and (t.idp_subject = ${subject} or lower(t.email) = lower(${email}))
        order by (t.idp_subject = ${subject}) desc nulls last limit 1`;
      return row ?? null;
    },
  };
}
