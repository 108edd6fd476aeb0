import { decodeJwt, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import { generateKey, hashKey, keyHint } from '../auth/keys';
import { newId } from '../lib/ids';
import type { FederationIssuerRecord, LiveRule, RuleMatch } from './federation-record-queries';
import type { FederationQueries } from './federation-queries';
import { type IssuerKeys, JwksUnavailable } from './jwks';
import { OAuthError } from '../lib/oauth-error';

// RFC 7523 §3 (read 2026-11-29): `iss`, `sub`, `aud`, `exp` required; `nbf`, `iat`, `jti` optional.
// The provider's rules (Workload Identity Federation, platform.claude.com/docs/en/manage-claude/
// workload-identity-federation and the SDK's beta/organization/federation types, read 2026-11-29):
// `iss` matches the issuer URL exactly; assertions carry `iat` and `exp` no further apart than the
// issuer's max_jwt_lifetime_seconds; a `jti` is single-use when the issuer checks it; minted
// tokens live 60 to 86,400 s and never past the assertion.

/** Signature algorithms accepted; `none` and the HMAC family (a shared secret) never. */
export const ALGORITHMS = ['RS256', 'ES256', 'EdDSA'] as const;
/** Clock skew allowed on `exp`, `nbf` and `iat`. */
const LEEWAY_S = 30;
export const MIN_TOKEN_S = 60;
export const MAX_TOKEN_S = 86_400;
/** Audience an assertion must name when its rule sets none. */
export const DEFAULT_AUDIENCE = 'keygate';

export interface ExchangeRequest {
  assertion: string;
  /** The rule to use (`fdrl_…`); or `organization_id` (the account) to try its rules for the issuer. */
  federationRuleId: string | null;
  organizationId: string | null;
  serviceAccountId: string | null;
}

export interface MintedToken {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
}

const invalidGrant = (why: string) => new OAuthError('invalid_grant', why);

/** Does a verified assertion satisfy the rule's matchers (all that are set)? */
export function matches(match: RuleMatch, claims: JWTPayload): boolean {
  const p = match.subject_prefix;
  if (p) {
    const sub = claims.sub ?? '';
    if (p.endsWith('*') ? !sub.startsWith(p.slice(0, -1)) : sub !== p) return false;
  }
  for (const [name, want] of Object.entries(match.claims ?? {})) if (claims[name] !== want) return false;
  return true;
}

/**
 * The RFC 7523 jwt-bearer exchange: an assertion signed by an issuer the account trusts becomes a
 * short-lived Keygate token of the service account the first matching rule names.
 */
export class WorkloadExchange {
  readonly #store: { federation: FederationQueries };
  readonly #keys: IssuerKeys;
  readonly #now: () => number;

  constructor(store: { federation: FederationQueries }, keys: IssuerKeys, clock: () => number) {
    this.#store = store;
    this.#keys = keys;
    this.#now = clock;
  }

  async exchange(req: ExchangeRequest): Promise<MintedToken> {
    let iss: string | undefined;
    let alg: string | undefined;
    try {
      alg = decodeProtectedHeader(req.assertion).alg;
      iss = decodeJwt(req.assertion).iss;
    } catch {
      throw invalidGrant('The assertion is not a JWT.');
    }
    if (!alg || !(ALGORITHMS as readonly string[]).includes(alg))
      throw invalidGrant(`The assertion's algorithm is not accepted: sign with ${ALGORITHMS.join(', ')}.`);
    if (!iss) throw invalidGrant('The assertion has no iss claim.');
    const rules = (
      await this.#store.federation.candidates(req.organizationId, iss, req.federationRuleId)
    ).filter((c) => !req.serviceAccountId || c.rule.serviceAccountId === req.serviceAccountId);
    if (rules.length === 0) throw invalidGrant('No federation rule accepts assertions from this issuer.');
    const verified = new Map<string, JWTPayload>();
    for (const live of rules) {
      let claims = verified.get(live.issuer.id);
      if (!claims) {
        claims = await this.#verify(live, req.assertion);
        verified.set(live.issuer.id, claims);
      }
      if (!audienceOk(live.rule.match, claims) || !matches(live.rule.match, claims)) continue;
      return this.#mint(live, claims);
    }
    throw invalidGrant('The assertion does not match the federation rule.');
  }

  async #verify({ issuer }: LiveRule, assertion: string): Promise<JWTPayload> {
    let claims: JWTPayload;
    try {
      const getKey = await this.#keys.getter(issuer);
      ({ payload: claims } = await jwtVerify(assertion, getKey, {
        issuer: issuer.issuerUrl,
        algorithms: [...ALGORITHMS],
        clockTolerance: LEEWAY_S,
        requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat'],
        currentDate: new Date(this.#now()),
      }));
    } catch (err) {
      if (err instanceof JwksUnavailable)
        throw new OAuthError('invalid_grant', "The issuer's signing keys could not be fetched.");
      throw invalidGrant(refusal(err));
    }
    if (claims.iat! > this.#now() / 1000 + LEEWAY_S)
      throw invalidGrant('The assertion was issued in the future.');
    if (claims.exp! - claims.iat! > issuer.maxJwtLifetimeSeconds)
      throw invalidGrant(
        `The assertion's lifetime (exp - iat) exceeds the issuer's ${issuer.maxJwtLifetimeSeconds} s.`,
      );
    return claims;
  }

  async #mint({ rule, issuer }: LiveRule, claims: JWTPayload): Promise<MintedToken> {
    const now = this.#now();
    const untilAssertion = Math.floor(claims.exp! - now / 1000);
    const seconds = Math.max(MIN_TOKEN_S, Math.min(rule.tokenLifetimeSeconds, untilAssertion, MAX_TOKEN_S));
    const secret = generateKey('live');
    const key = {
      id: newId('key'),
      accountId: rule.accountId,
      memberId: null,
      kind: 'live' as const,
      name: `workload token (${rule.name})`,
      app: rule.serviceAccountName,
      environment: null,
      hint: keyHint(secret),
      expiresAt: new Date(now + seconds * 1000),
      createdBy: rule.serviceAccountId,
    };
    const jti = jtiOf(issuer, claims);
    const out = await this.#store.federation.mint(rule, key, hashKey(secret), jti);
    if (out === 'gone') throw invalidGrant('The federation rule was changed or archived.');
    if (out === 'replayed') throw invalidGrant('This assertion was already used (jti).');
    return { access_token: secret, token_type: 'Bearer', expires_in: seconds };
  }
}

function audienceOk(match: RuleMatch, claims: JWTPayload): boolean {
  const want = match.audience ?? DEFAULT_AUDIENCE;
  return (Array.isArray(claims.aud) ? claims.aud : [claims.aud]).includes(want);
}

function jtiOf(issuer: FederationIssuerRecord, claims: JWTPayload) {
  if (!issuer.checkJti || typeof claims.jti !== 'string') return null;
  return {
    issuerId: issuer.id,
    jti: claims.jti.slice(0, 512),
    expiresAt: new Date((claims.exp! + LEEWAY_S) * 1000),
  };
}

/** What jose's refusal means, in words that name no key material. */
function refusal(err: unknown): string {
  switch ((err as { code?: string }).code) {
    case 'ERR_JWT_EXPIRED':
      return 'The assertion has expired.';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      return `The assertion's ${(err as { claim?: string }).claim ?? ''} claim is not accepted.`;
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return "The assertion's signature does not verify with the issuer's keys.";
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return "The assertion's algorithm is not accepted.";
    default:
      return 'The assertion could not be verified.';
  }
}
