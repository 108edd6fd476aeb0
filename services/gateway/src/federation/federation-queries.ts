import { writeAudit, type AuditEntry } from '../tenancy/audit-queries';
import { inTransaction, type Sql } from '../store/database';
import {
  isUnique,
  issuerCols,
  revokeTokens,
  ruleCols,
  type FederationIssuerRecord,
  type FederationRuleRecord,
  type IssuerPatch,
  type RulePatch,
} from './federation-record-queries';
import { federationTokenQueries } from './federation-token-queries';
import { DuplicateNameError } from '../accounts/invite-queries';
import { keyset, type Page, type PageQuery } from '../store/pagination';

/** Federation issuers and rules of the account API, and the token exchange's queries. */
export function federationQueries(sql: Sql) {
  async function audited<T>(accountId: string, audit: AuditEntry, work: (t: Sql) => Promise<T | undefined>) {
    try {
      return await inTransaction(sql, async (t) => {
        const row = await work(t);
        if (row === undefined) return null;
        await writeAudit(t, accountId, audit);
        return row;
      });
    } catch (e) {
      if (isUnique(e)) throw new DuplicateNameError();
      throw e;
    }
  }
  const oneRule = async (t: Sql, accountId: string, id: string) =>
    (
      await t<FederationRuleRecord[]>`
        select ${ruleCols(t)} from federation_rules t where t.account_id = ${accountId} and t.id = ${id}`
    )[0];

  return {
    async createIssuer(
      i: Pick<
        FederationIssuerRecord,
        'id' | 'accountId' | 'name' | 'issuerUrl' | 'jwks' | 'checkJti' | 'maxJwtLifetimeSeconds'
      >,
      actor: string,
    ): Promise<FederationIssuerRecord> {
      const audit = {
        actor,
        action: 'federation_issuer.create',
        targetId: i.id,
        details: { issuer_url: i.issuerUrl },
      };
      const row = await audited(i.accountId, audit, async (t) => {
        const [r] = await t<FederationIssuerRecord[]>`
          insert into federation_issuers as t (id, account_id, name, issuer_url, jwks, check_jti, max_jwt_lifetime_seconds, created_by, updated_by)
          values (${i.id}, ${i.accountId}, ${i.name}, ${i.issuerUrl}, ${t.json(i.jwks as never)}, ${i.checkJti},
                  ${i.maxJwtLifetimeSeconds}, ${actor}, ${actor})
          returning ${issuerCols(t)}`;
        return r;
      });
      return row!;
    },

    async getIssuer(accountId: string, id: string): Promise<FederationIssuerRecord | null> {
      const [r] = await sql<FederationIssuerRecord[]>`
        select ${issuerCols(sql)} from federation_issuers t where t.account_id = ${accountId} and t.id = ${id}`;
      return r ?? null;
    },

    async listIssuers(
      accountId: string,
      archived: boolean,
      q: PageQuery,
    ): Promise<Page<FederationIssuerRecord>> {
      const ks = keyset(sql, 'federation_issuers', accountId, q);
      const rows = await sql<FederationIssuerRecord[]>`
        select ${issuerCols(sql)} from federation_issuers t
        where t.account_id = ${accountId} and (${archived} or t.archived_at is null) ${ks.where}
        ${ks.order} limit ${ks.limit}`;
      return ks.finish(rows);
    },

    /** Null: no such issuer; 'archived': it cannot change. A new URL or key source ends its rules' tokens. */
    async updateIssuer(
      accountId: string,
      id: string,
      p: IssuerPatch,
      actor: string,
    ): Promise<FederationIssuerRecord | 'archived' | null> {
      const audit = {
        actor,
        action: 'federation_issuer.update',
        targetId: id,
        details: { fields: Object.keys(p) },
      };
      return audited(accountId, audit, async (t) => {
        const [before] = await t<FederationIssuerRecord[]>`
          select ${issuerCols(t)} from federation_issuers t where t.account_id = ${accountId} and t.id = ${id} for update`;
        if (!before) return undefined;
        if (before.archivedAt) return 'archived' as const;
        const [r] = await t<FederationIssuerRecord[]>`
          update federation_issuers t set
            name = ${p.name ?? before.name}, issuer_url = ${p.issuerUrl ?? before.issuerUrl},
            jwks = ${t.json((p.jwks ?? before.jwks) as never)}, check_jti = ${p.checkJti ?? before.checkJti},
            max_jwt_lifetime_seconds = ${p.maxJwtLifetimeSeconds ?? before.maxJwtLifetimeSeconds},
            updated_by = ${actor}, updated_at = now()
          where t.id = ${id} returning ${issuerCols(t)}`;
        if (p.issuerUrl !== undefined || p.jwks !== undefined) {
          const rules = await t<{ id: string }[]>`select id from federation_rules where issuer_id = ${id}`;
          await revokeTokens(
            t,
            accountId,
            rules.map((x) => x.id),
          );
        }
        return r;
      });
    },

    /** Null: no such issuer; 'in-use': a live rule still names it (archive the rules first). */
    async archiveIssuer(
      accountId: string,
      id: string,
      actor: string,
    ): Promise<FederationIssuerRecord | 'in-use' | null> {
      const audit = { actor, action: 'federation_issuer.archive', targetId: id };
      return audited(accountId, audit, async (t) => {
        const [live] = await t`
          select 1 from federation_rules where issuer_id = ${id} and account_id = ${accountId} and archived_at is null limit 1`;
        if (live) return 'in-use' as const;
        const [r] = await t<FederationIssuerRecord[]>`
          update federation_issuers t set archived_at = coalesce(archived_at, now()),
            archived_by = coalesce(archived_by, ${actor}), updated_at = now()
          where t.account_id = ${accountId} and t.id = ${id} returning ${issuerCols(t)}`;
        return r;
      });
    },

    async createRule(
      r: Pick<
        FederationRuleRecord,
        | 'id'
        | 'accountId'
        | 'issuerId'
        | 'serviceAccountId'
        | 'name'
        | 'description'
        | 'match'
        | 'tokenLifetimeSeconds'
        | 'enabled'
      >,
      actor: string,
    ): Promise<FederationRuleRecord> {
      const audit = {
        actor,
        action: 'federation_rule.create',
        targetId: r.id,
        details: { issuer_id: r.issuerId, service_account_id: r.serviceAccountId, match: r.match },
      };
      const row = await audited(r.accountId, audit, async (t) => {
        await t`
          insert into federation_rules (id, account_id, issuer_id, service_account_id, name, description, match,
                                        token_lifetime_seconds, enabled, created_by, updated_by)
          values (${r.id}, ${r.accountId}, ${r.issuerId}, ${r.serviceAccountId}, ${r.name}, ${r.description},
                  ${t.json(r.match as never)}, ${r.tokenLifetimeSeconds}, ${r.enabled}, ${actor}, ${actor})`;
        return oneRule(t, r.accountId, r.id);
      });
      return row!;
    },

    async getRule(accountId: string, id: string): Promise<FederationRuleRecord | null> {
      return (await oneRule(sql, accountId, id)) ?? null;
    },

    async listRules(
      accountId: string,
      f: { issuerId: string | null; archived: boolean },
      q: PageQuery,
    ): Promise<Page<FederationRuleRecord>> {
      const ks = keyset(sql, 'federation_rules', accountId, q);
      const rows = await sql<FederationRuleRecord[]>`
        select ${ruleCols(sql)} from federation_rules t
        where t.account_id = ${accountId} and (${f.archived} or t.archived_at is null)
          and (${f.issuerId}::text is null or t.issuer_id = ${f.issuerId}) ${ks.where}
        ${ks.order} limit ${ks.limit}`;
      return ks.finish(rows);
    },

    /** Null: no such rule; 'archived': it cannot change. A change of who or what it admits ends its tokens. */
    async updateRule(
      accountId: string,
      id: string,
      p: RulePatch,
      actor: string,
    ): Promise<FederationRuleRecord | 'archived' | null> {
      const audit = { actor, action: 'federation_rule.update', targetId: id, details: { ...p } };
      return audited(accountId, audit, async (t) => {
        const before = (
          await t<FederationRuleRecord[]>`
            select ${ruleCols(t)} from federation_rules t where t.account_id = ${accountId} and t.id = ${id} for update`
        )[0];
        if (!before) return undefined;
        if (before.archivedAt) return 'archived' as const;
        await t`
          update federation_rules set
            name = ${p.name ?? before.name},
            description = ${p.description !== undefined ? p.description : before.description},
            match = ${t.json((p.match ?? before.match) as never)},
            token_lifetime_seconds = ${p.tokenLifetimeSeconds ?? before.tokenLifetimeSeconds},
            enabled = ${p.enabled ?? before.enabled},
            service_account_id = ${p.serviceAccountId ?? before.serviceAccountId},
            updated_by = ${actor}, updated_at = now()
          where id = ${id}`;
        if (p.match || p.serviceAccountId || p.enabled === false) await revokeTokens(t, accountId, [id]);
        return oneRule(t, accountId, id);
      });
    },

    /** Exchange through it stops and the tokens it minted end, on every instance. */
    async archiveRule(accountId: string, id: string, actor: string): Promise<FederationRuleRecord | null> {
      const audit = { actor, action: 'federation_rule.archive', targetId: id };
      return audited(accountId, audit, async (t) => {
        const [r] = await t`
          update federation_rules set archived_at = coalesce(archived_at, now()),
            archived_by = coalesce(archived_by, ${actor}), updated_at = now()
          where account_id = ${accountId} and id = ${id} returning id`;
        if (!r) return undefined;
        await revokeTokens(t, accountId, [id]);
        return oneRule(t, accountId, id);
      });
    },

    /** The live, enabled rules of an account whose issuer claims `iss` (or the one rule named), oldest first. */
    ...federationTokenQueries(sql),
  };
}

export type FederationQueries = ReturnType<typeof federationQueries>;
