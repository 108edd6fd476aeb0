import type { MemberRecord } from '../tenancy/account-queries';
import { writeAudit, type AuditEntry } from '../tenancy/audit-queries';
import { inTransaction, type Sql } from '../store/database';
import { deprovision, idpSessionQueries } from './idp-session-queries';
import { guardSeats, insertMember, memberCols } from '../tenancy/member-queries';

export type { IdpSessionRecord } from './idp-session-queries';

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
  /** A first sign-in may take over an existing member not yet bound, by a verified email. */
  linkExistingMembers: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export type IdentityProviderInput = Omit<IdentityProviderRecord, 'createdAt' | 'updatedAt'>;

/** What the provider said about a person at sign-in or refresh. */
export interface IdpPerson {
  subject: string;
  email: string;
  /** The provider asserted `email_verified: true` (the JSON boolean, nothing else). */
  emailVerified: boolean;
  name: string;
  groups: string[];
}

/** Why a sign-in found no member it may be: the caller words the refusal. */
export class IdentityLinkError extends Error {
  constructor(readonly reason: 'bound' | 'unverified' | 'not-linkable' | 'not-provisioned') {
    super(`identity link refused: ${reason}`);
  }
}

const idpCols = (sql: Sql) => sql`
  account_id as "accountId", name, issuer, client_id as "clientId", client_secret_sealed as "clientSecretSealed",
  allowed_domains as "allowedDomains", groups_claim as "groupsClaim", provision, provision_groups as "provisionGroups",
  link_existing_members as "linkExistingMembers", created_at as "createdAt", updated_at as "updatedAt"`;

export function identityQueries(sql: Sql) {
  return {
    ...idpSessionQueries(sql),

    async provider(accountId: string): Promise<IdentityProviderRecord | null> {
      const [row] = await sql<IdentityProviderRecord[]>`
        select ${idpCols(sql)} from identity_providers where account_id = ${accountId}`;
      return row ?? null;
    },

    /**
     * Saves the connection. A new issuer ends every device session (their refresh tokens were
     * the old issuer's) in the same transaction.
     */
    async saveProvider(p: IdentityProviderInput, audit: AuditEntry): Promise<IdentityProviderRecord> {
      return inTransaction(sql, async (t) => {
        const [before] = await t<{ issuer: string }[]>`
          select issuer from identity_providers where account_id = ${p.accountId} for update`;
        const [row] = await t<IdentityProviderRecord[]>`
          insert into identity_providers (account_id, name, issuer, client_id, client_secret_sealed, allowed_domains,
            groups_claim, provision, provision_groups, link_existing_members)
          values (${p.accountId}, ${p.name}, ${p.issuer}, ${p.clientId}, ${p.clientSecretSealed}, ${p.allowedDomains},
            ${p.groupsClaim}, ${p.provision}, ${p.provisionGroups}, ${p.linkExistingMembers})
          on conflict (account_id) do update set name = excluded.name, issuer = excluded.issuer,
            client_id = excluded.client_id, client_secret_sealed = excluded.client_secret_sealed,
            allowed_domains = excluded.allowed_domains, groups_claim = excluded.groups_claim,
            provision = excluded.provision, provision_groups = excluded.provision_groups,
            link_existing_members = excluded.link_existing_members, updated_at = now()
          returning ${idpCols(t)}`;
        await writeAudit(t, p.accountId, audit);
        if (before && before.issuer !== p.issuer) {
          const ended = await t<{ n: number }[]>`
            with e as (update idp_sessions set ended_at = now() where account_id = ${p.accountId} and ended_at is null returning 1)
            select count(*)::int as n from e`;
          await writeAudit(t, p.accountId, {
            actor: audit.actor,
            action: 'identity_provider.sessions_ended',
            targetId: p.accountId,
            details: { reason: 'issuer changed', from: before.issuer, to: p.issuer, sessions: ended[0]!.n },
          });
        }
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
     * The member a signed-in person is. Found by (issuer, subject); else an active member with the
     * same email is bound to this person only if it is bound to no one at this issuer, the email
     * is verified, and either the account allows linking or the provider's SCIM client created it;
     * else a new developer, when `mayCreate`. Throws IdentityLinkError otherwise.
     */
    async provision(
      idp: Pick<IdentityProviderRecord, 'accountId' | 'issuer' | 'linkExistingMembers'>,
      person: IdpPerson,
      next: { id: string; mayCreate: boolean },
      audit: AuditEntry,
    ): Promise<{ member: MemberRecord; created: boolean }> {
      const { accountId, issuer } = idp;
      return inTransaction(sql, async (t) => {
        const [bound] = await t<MemberRecord[]>`
          update members t set idp_groups = ${person.groups}
          where t.id = (select m.id from members m where m.account_id = ${accountId} and m.status = 'active'
            and m.idp_issuer = ${issuer} and m.idp_subject = ${person.subject} limit 1)
          returning ${memberCols(t)}`;
        if (bound) return { member: bound, created: false };
        const [same] = await t<(MemberRecord & { idpIssuer: string | null; scimManaged: boolean })[]>`
          select ${memberCols(t)}, t.idp_issuer as "idpIssuer", t.scim_managed as "scimManaged"
          from members t where t.account_id = ${accountId} and t.status = 'active' and lower(t.email) = lower(${person.email})
          for update`;
        if (same) {
          if (same.idpIssuer === issuer) throw new IdentityLinkError('bound');
          if (!person.emailVerified) throw new IdentityLinkError('unverified');
          if (!idp.linkExistingMembers && !same.scimManaged) throw new IdentityLinkError('not-linkable');
          await t`
            update members set idp_issuer = ${issuer}, idp_subject = ${person.subject}, idp_groups = ${person.groups}
            where id = ${same.id}`;
          await writeAudit(t, accountId, {
            actor: audit.actor,
            action: 'member.linked',
            targetId: same.id,
            details: { email: same.email, issuer, subject: person.subject },
          });
          return { member: same, created: false };
        }
        if (!next.mayCreate) throw new IdentityLinkError('not-provisioned');
        await guardSeats(t, accountId);
        const member = await insertMember(t, {
          id: next.id,
          accountId,
          email: person.email,
          name: person.name,
          role: 'developer',
        });
        await t`
          update members set idp_groups = ${person.groups}, idp_issuer = ${issuer}, idp_subject = ${person.subject}
          where id = ${member.id}`;
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

    /** Deprovisions a member (SCIM); LastAdminError for the account's last active admin. */
    async deprovision(accountId: string, memberId: string, audit: AuditEntry): Promise<boolean> {
      return inTransaction(sql, (t) => deprovision(t, accountId, memberId, audit));
    },
  };
}

export type IdentityQueries = ReturnType<typeof identityQueries>;
