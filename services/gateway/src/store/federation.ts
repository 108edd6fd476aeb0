import { writeAudit, type AuditEntry } from './audit';
import { inTransaction, type Sql } from './database';
import { invalidate } from './invalidations';
import { DuplicateNameError } from './invites';
import { insertKey, type KeyRecord, type NewKey } from './keys';
import { keyset, type Page, type PageQuery } from './pagination';

/** How an issuer's signing keys are found: its discovery document, a fixed JWKS URL, or keys given inline. */
export type JwksSource =
  | { type: 'discovery'; discovery_base?: string | null }
  | { type: 'explicit_url'; url: string }
  | { type: 'inline'; keys: Record<string, unknown>[] };

export interface FederationIssuerRecord {
  id: string;
  accountId: string;
  name: string;
  issuerUrl: string;
  jwks: JwksSource;
  checkJti: boolean;
  maxJwtLifetimeSeconds: number;
  createdBy: string | null;
  updatedBy: string | null;
  archivedBy: string | null;
  archivedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a verified assertion must carry for a rule to apply; every field set must pass. */
export interface RuleMatch {
  audience?: string | null;
  subject_prefix?: string | null;
  claims?: Record<string, string> | null;
}

export interface FederationRuleRecord {
  id: string;
  accountId: string;
  issuerId: string;
  issuerName: string | null;
  serviceAccountId: string;
  serviceAccountName: string | null;
  name: string;
  description: string | null;
  match: RuleMatch;
  tokenLifetimeSeconds: number;
  enabled: boolean;
  createdBy: string | null;
  updatedBy: string | null;
  archivedBy: string | null;
  archivedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A rule an exchange may use, with its issuer: both live, its service account not archived. */
export interface LiveRule {
  rule: FederationRuleRecord;
  issuer: FederationIssuerRecord;
}

export type IssuerPatch = Partial<
  Pick<FederationIssuerRecord, 'name' | 'issuerUrl' | 'jwks' | 'checkJti' | 'maxJwtLifetimeSeconds'>
>;
export type RulePatch = Partial<
  Pick<
    FederationRuleRecord,
    'name' | 'description' | 'match' | 'tokenLifetimeSeconds' | 'enabled' | 'serviceAccountId'
  >
>;

const issuerCols = (sql: Sql, t = 't') => sql`
  ${sql(t)}.id, ${sql(t)}.account_id as "accountId", ${sql(t)}.name, ${sql(t)}.issuer_url as "issuerUrl", ${sql(t)}.jwks,
  ${sql(t)}.check_jti as "checkJti", ${sql(t)}.max_jwt_lifetime_seconds as "maxJwtLifetimeSeconds",
  ${sql(t)}.created_by as "createdBy", ${sql(t)}.updated_by as "updatedBy", ${sql(t)}.archived_by as "archivedBy",
  ${sql(t)}.archived_at as "archivedAt", ${sql(t)}.created_at as "createdAt", ${sql(t)}.updated_at as "updatedAt"`;

const ruleCols = (sql: Sql) => sql`
  t.id, t.account_id as "accountId", t.issuer_id as "issuerId",
  (select i.name from federation_issuers i where i.id = t.issuer_id) as "issuerName",
  t.service_account_id as "serviceAccountId",
  (select s.name from service_accounts s where s.id = t.service_account_id) as "serviceAccountName",
  t.name, t.description, t.match, t.token_lifetime_seconds as "tokenLifetimeSeconds", t.enabled,
  t.created_by as "createdBy", t.updated_by as "updatedBy", t.archived_by as "archivedBy",
  t.archived_at as "archivedAt", t.created_at as "createdAt", t.updated_at as "updatedAt"`;

const isUnique = (e: unknown) => (e as { code?: string })?.code === '23505';

/** Ends every token the rules minted, at once and on every instance (their secrets go). */
async function revokeTokens(t: Sql, accountId: string, ruleIds: string[]): Promise<void> {
  await t`delete from key_secrets where key_id in (
    select id from api_keys where account_id = ${accountId} and federation_rule_id = any(${ruleIds}))`;
  await invalidate(t, `account:${accountId}`);
}

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
    async candidates(accountId: string | null, iss: string, ruleId: string | null): Promise<LiveRule[]> {
      if (!accountId && !ruleId) return [];
      const rules = await sql<FederationRuleRecord[]>`
        select ${ruleCols(sql)}
        from federation_rules t
        join federation_issuers i on i.id = t.issuer_id
        join service_accounts s on s.id = t.service_account_id
        where t.archived_at is null and t.enabled and i.archived_at is null and s.archived_at is null
          and i.issuer_url = ${iss}
          and (${accountId}::text is null or t.account_id = ${accountId})
          and (${ruleId}::text is null or t.id = ${ruleId})
        order by t.created_at, t.id limit 50`;
      if (rules.length === 0) return [];
      const issuers = await sql<FederationIssuerRecord[]>`
        select ${issuerCols(sql)} from federation_issuers t where t.id = any(${[...new Set(rules.map((r) => r.issuerId))]})`;
      const byId = new Map(issuers.map((i) => [i.id, i]));
      return rules.map((rule) => ({ rule, issuer: byId.get(rule.issuerId)! }));
    },

    /**
     * Mints a token (a key of the rule's service account that expires) if the rule is still live:
     * the rule's row is read under a share lock, so an archive racing this waits, then revokes it.
     * 'replayed': the assertion's `jti` was used already within its life.
     */
    async mint(
      rule: FederationRuleRecord,
      key: NewKey,
      hash: Buffer,
      jti: { issuerId: string; jti: string; expiresAt: Date } | null,
    ): Promise<KeyRecord | 'gone' | 'replayed'> {
      return inTransaction(sql, async (t) => {
        const [live] = await t`
          select 1 from federation_rules r
          join federation_issuers i on i.id = r.issuer_id and i.archived_at is null
          join service_accounts s on s.id = r.service_account_id and s.archived_at is null
          where r.id = ${rule.id} and r.archived_at is null and r.enabled
            and r.service_account_id = ${rule.serviceAccountId} and r.match = ${t.json(rule.match as never)}
          for share of r`;
        if (!live) return 'gone' as const;
        if (jti) {
          await t`delete from federation_jti where issuer_id = ${jti.issuerId} and expires_at < now()`;
          const fresh = await t`
            insert into federation_jti (issuer_id, jti, expires_at) values (${jti.issuerId}, ${jti.jti}, ${jti.expiresAt})
            on conflict do nothing returning 1`;
          if (fresh.length === 0) return 'replayed' as const;
        }
        // Expired tokens keep their rows (the call log names them) but not their secrets.
        await t`delete from key_secrets where key_id in (
          select id from api_keys where federation_rule_id = ${rule.id} and expires_at < now() - interval '1 day')`;
        const row = await insertKey(t, key, hash);
        await t`update api_keys set service_account_id = ${rule.serviceAccountId}, federation_rule_id = ${rule.id}
                where id = ${row.id}`;
        await writeAudit(t, rule.accountId, {
          actor: rule.serviceAccountId,
          action: 'federation.token_mint',
          targetId: row.id,
          details: { federation_rule_id: rule.id, expires_at: key.expiresAt?.toISOString() ?? null },
        });
        return row;
      });
    },
  };
}
