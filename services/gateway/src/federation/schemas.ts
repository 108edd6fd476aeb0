import { z } from 'zod';
import { cursorParams } from '../account-api/cursor';
import type { FederationIssuerRecord, FederationRuleRecord } from './federation-record-queries';
import { MAX_TOKEN_S, MIN_TOKEN_S } from './exchange';

// The provider's shapes: BetaFederationIssuer and BetaFederationRule of the official TypeScript
// SDK (src/resources/beta/organization/federation/issuers.ts and rules/rules.ts), read 2026-11-29.
// Kept: issuer_url, jwks {discovery | explicit_url | inline}, check_jti, max_jwt_lifetime_seconds;
// rule match {audience, subject_prefix, claims}, target {type: service_account}, token_lifetime_seconds.
// Not taken: workspaces, oauth_scope and CEL `condition` (Keygate has no workspaces or scopes);
// `enabled` on a rule is Keygate's, so a rule can be paused without archiving it. Unlike the
// provider (whose minted tokens outlive an archived rule), ending a rule ends its tokens.

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const slug = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'lowercase letters, digits and hyphens, at most 63');
const url = z.url({ protocol: /^https?$/ }).max(2000);
const Jwks = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('discovery'), discovery_base: url.nullable().optional() }),
  z.strictObject({ type: z.literal('explicit_url'), url }),
  z.strictObject({
    type: z.literal('inline'),
    keys: z.array(z.record(z.string(), z.unknown())).min(1).max(100),
  }),
]);
const lifetime = z.number().int().min(1).max(176_400);
export const CreateIssuer = z.strictObject({
  name: slug,
  issuer_url: z.string().min(1).max(2000),
  jwks: Jwks.default({ type: 'discovery' }),
  check_jti: z.boolean().nullable().optional(),
  max_jwt_lifetime_seconds: lifetime.nullable().optional(),
});
export const UpdateIssuer = z.strictObject({
  name: slug.nullable().optional(),
  issuer_url: z.string().min(1).max(2000).nullable().optional(),
  jwks: Jwks.nullable().optional(),
  check_jti: z.boolean().nullable().optional(),
  max_jwt_lifetime_seconds: lifetime.nullable().optional(),
});
const claimName = z.string().min(1).max(200);
const Match = z
  .strictObject({
    audience: z.string().min(1).max(2000).nullable().optional(),
    subject_prefix: z.string().min(1).max(2000).nullable().optional(),
    claims: z.record(claimName, z.string().max(2000)).nullable().optional(),
  })
  .refine((m) => (m.subject_prefix && m.subject_prefix !== '*') || Object.keys(m.claims ?? {}).length > 0, {
    message:
      'set subject_prefix (not a bare *) or claims: audience alone admits every workload of the issuer',
  });
const Target = z.strictObject({
  type: z.literal('service_account'),
  service_account_id: z.string().min(1).max(100),
  service_account_name: z.string().nullable().optional(),
});
const tokenLifetime = z.number().int().min(MIN_TOKEN_S).max(MAX_TOKEN_S);
export const CreateRule = z.strictObject({
  name: slug,
  issuer_id: z.string().min(1).max(100),
  match: Match,
  target: Target,
  description: z.string().max(1000).nullable().optional(),
  token_lifetime_seconds: tokenLifetime.optional(),
  enabled: z.boolean().optional(),
});
export const UpdateRule = z.strictObject({
  name: slug.nullable().optional(),
  match: Match.nullable().optional(),
  target: Target.nullable().optional(),
  description: z.string().max(1000).nullable().optional(),
  token_lifetime_seconds: tokenLifetime.nullable().optional(),
  enabled: z.boolean().nullable().optional(),
});
export const ListIssuers = z.object({ ...cursorParams, include_archived: z.stringbool().default(false) });
export const ListRules = z.object({
  ...cursorParams,
  include_archived: z.stringbool().default(false),
  issuer_id: z.string().min(1).max(100).optional(),
});

export function issuerJson(i: FederationIssuerRecord) {
  return {
    id: i.id,
    type: 'federation_issuer' as const,
    name: i.name,
    issuer_url: i.issuerUrl,
    jwks: i.jwks,
    check_jti: i.checkJti,
    max_jwt_lifetime_seconds: i.maxJwtLifetimeSeconds,
    jwks_polling_disabled_at: null,
    poll_status: null,
    archived_at: iso(i.archivedAt),
    archived_by_actor_id: i.archivedBy,
    created_at: i.createdAt.toISOString(),
    created_by_actor_id: i.createdBy,
    updated_at: i.updatedAt.toISOString(),
    updated_by_actor_id: i.updatedBy,
  };
}

export function ruleJson(r: FederationRuleRecord) {
  return {
    id: r.id,
    type: 'federation_rule' as const,
    name: r.name,
    description: r.description,
    issuer_id: r.issuerId,
    issuer_name: r.issuerName,
    match: r.match,
    target: {
      type: 'service_account' as const,
      service_account_id: r.serviceAccountId,
      service_account_name: r.serviceAccountName,
    },
    token_lifetime_seconds: r.tokenLifetimeSeconds,
    enabled: r.enabled,
    attributes: null,
    archived_at: iso(r.archivedAt),
    archived_by_actor_id: r.archivedBy,
    created_at: r.createdAt.toISOString(),
    created_by_actor_id: r.createdBy,
    updated_at: r.updatedAt.toISOString(),
    updated_by_actor_id: r.updatedBy,
  };
}
