import { writeAudit } from '../tenancy/audit-queries';
import { inTransaction, type Sql } from '../store/database';
import {
  issuerCols,
  ruleCols,
  type FederationIssuerRecord,
  type FederationRuleRecord,
  type LiveRule,
} from './federation-record-queries';
import { insertKey, type KeyRecord, type NewKey } from '../tenancy/key-queries';

/** What `POST /v1/oauth/token` reads and writes: the rules an assertion may use, and the token it mints. */
export function federationTokenQueries(sql: Sql) {
  return {
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
