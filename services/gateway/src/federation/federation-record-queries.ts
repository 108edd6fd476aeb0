import type { Sql } from '../store/database';
import { invalidate } from '../store/invalidations';

/** How an issuer's signing keys are found: its discovery document, a fixed JWKS URL, or keys given inline. */
export type JwksSource =
  | { type: 'discovery'; discovery_base?: string | null }
  | { type: 'explicit_url'; url: string }
  | { type: 'inline'; keys: Record<string, unknown>[] };

/** Who made, changed and archived a federation object, and when. */
interface Lifecycle {
  createdBy: string | null;
  updatedBy: string | null;
  archivedBy: string | null;
  archivedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface FederationIssuerRecord extends Lifecycle {
  id: string;
  accountId: string;
  name: string;
  issuerUrl: string;
  jwks: JwksSource;
  checkJti: boolean;
  maxJwtLifetimeSeconds: number;
}

/** What a verified assertion must carry for a rule to apply; every field set must pass. */
export interface RuleMatch {
  audience?: string | null;
  subject_prefix?: string | null;
  claims?: Record<string, string> | null;
}

export interface FederationRuleRecord extends Lifecycle {
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

export const issuerCols = (sql: Sql, t = 't') => sql`
  ${sql(t)}.id, ${sql(t)}.account_id as "accountId", ${sql(t)}.name, ${sql(t)}.issuer_url as "issuerUrl", ${sql(t)}.jwks,
  ${sql(t)}.check_jti as "checkJti", ${sql(t)}.max_jwt_lifetime_seconds as "maxJwtLifetimeSeconds",
  ${sql(t)}.created_by as "createdBy", ${sql(t)}.updated_by as "updatedBy", ${sql(t)}.archived_by as "archivedBy",
  ${sql(t)}.archived_at as "archivedAt", ${sql(t)}.created_at as "createdAt", ${sql(t)}.updated_at as "updatedAt"`;

export const ruleCols = (sql: Sql) => sql`
  t.id, t.account_id as "accountId", t.issuer_id as "issuerId",
  (select i.name from federation_issuers i where i.id = t.issuer_id) as "issuerName",
  t.service_account_id as "serviceAccountId",
  (select s.name from service_accounts s where s.id = t.service_account_id) as "serviceAccountName",
  t.name, t.description, t.match, t.token_lifetime_seconds as "tokenLifetimeSeconds", t.enabled,
  t.created_by as "createdBy", t.updated_by as "updatedBy", t.archived_by as "archivedBy",
  t.archived_at as "archivedAt", t.created_at as "createdAt", t.updated_at as "updatedAt"`;

export const isUnique = (e: unknown) => (e as { code?: string })?.code === '23505';

/** Ends every token the rules minted, at once and on every instance (their secrets go). */
export async function revokeTokens(t: Sql, accountId: string, ruleIds: string[]): Promise<void> {
  await t`delete from key_secrets where key_id in (
    select id from api_keys where account_id = ${accountId} and federation_rule_id = any(${ruleIds}))`;
  await invalidate(t, `account:${accountId}`);
}
