import * as client from 'openid-client';
import { fetch, type Dispatcher } from 'undici';
import { EgressBlockedError, type EgressPolicy } from '../lib/egress';
import { GatewayError } from '../lib/errors';
import type { SecretBox } from '../lib/secret-box';
import type { IdentityProviderRecord, IdentityQueries, IdpPerson } from './identity-queries';
import type { Store } from '../store';

/** Sign-in's queries: the account's provider and its sessions, and the kernel's rows a sign-in makes. */
export type MemberTokenStore = Pick<Store, 'accounts' | 'keys' | 'invites'> & { identity: IdentityQueries };

/** What sign-in through an account's identity provider needs. */
export interface IdentityDeps {
  store: MemberTokenStore;
  box: SecretBox;
  /** Every request to an issuer passes it: an account aims these, as it aims webhooks. */
  egress: EgressPolicy;
  clock: () => number;
  /** Life of a member token issued after a sign-in or a refresh (KEYGATE_MEMBER_TOKEN_TTL_MS). */
  tokenTtlMs: number;
  /** A device sign-in not renewed for this long ends (KEYGATE_IDP_REFRESH_IDLE_MS; 30 days if unset). */
  refreshIdleMs?: number;
  /** KEYGATE_PUBLIC_URL: where the provider sends browsers back (else the request's origin). */
  publicUrl?: string | null;
}

// OpenID Connect Discovery 1.0 and RFC 8628 (device flow) through openid-client 6; the scopes
// asked: https://openid.net/specs/openid-connect-core-1_0.html#ScopeClaims (read 2026-11-25).
export const SCOPE = 'openid email profile offline_access';
const DISCOVERY_TTL_MS = 5 * 60_000;
const TIMEOUT_S = 10;

/** A 502 for a provider that could not be reached or answered nonsense (its words are not repeated). */
export const unreachable = () =>
  new GatewayError(
    'api_error',
    "The account's identity provider could not be reached or gave an unusable answer; try again, or ask an admin to check its settings.",
    { status: 502 },
  );

/** The relying party: one openid-client configuration per account, discovered through the egress policy. */
export class OidcClients {
  readonly #cache = new Map<
    string,
    { until: number; version: number; config: Promise<client.Configuration> }
  >();
  readonly #dispatcher: Dispatcher;
  readonly #deps: IdentityDeps;

  constructor(deps: IdentityDeps) {
    this.#deps = deps;
    this.#dispatcher = deps.egress.dispatcher({ connectTimeoutMs: TIMEOUT_S * 1000 });
  }

  readonly #fetch: client.CustomFetch = async (url, options) => {
    await this.#deps.egress.check(url);
    return (await fetch(url, { ...options, dispatcher: this.#dispatcher } as never)) as unknown as Response;
  };

  /** Closes the connections kept to issuers (a CLI command then exits at once). */
  close(): Promise<void> {
    return this.#dispatcher.close();
  }

  /** The account's provider, or the 404 that says none is connected. */
  async provider(accountId: string): Promise<IdentityProviderRecord> {
    const idp = await this.#deps.store.identity.provider(accountId);
    if (!idp)
      throw new GatewayError(
        'not_found_error',
        `Account '${accountId}' has not connected an identity provider: an admin connects one in the dashboard's settings or with \`keygate idp set\`.`,
      );
    return idp;
  }

  async config(idp: IdentityProviderRecord): Promise<client.Configuration> {
    const now = this.#deps.clock();
    const version = idp.updatedAt.getTime();
    const hit = this.#cache.get(idp.accountId);
    if (hit && hit.until > now && hit.version === version) return hit.config;
    const config = this.discover(idp.issuer, idp.clientId, this.secretOf(idp));
    this.#cache.set(idp.accountId, { until: now + DISCOVERY_TTL_MS, version, config });
    config.catch(() => this.#cache.delete(idp.accountId));
    return config;
  }

  secretOf(idp: IdentityProviderRecord): string {
    return this.#deps.box.open(idp.clientSecretSealed, { purpose: 'idp-client-secret', row: idp.accountId });
  }

  /** Discovery of an issuer: refused by the egress policy, unreachable, or a configuration. */
  async discover(issuer: string, clientId: string, secret: string): Promise<client.Configuration> {
    try {
      const url = new URL(issuer);
      return await client.discovery(url, clientId, undefined, client.ClientSecretBasic(secret), {
        [client.customFetch]: this.#fetch,
        timeout: TIMEOUT_S,
        // Plain http only where the operator allowed the host (KEYGATE_EGRESS_ALLOW): a lab provider.
        ...(url.protocol === 'http:' ? { execute: [client.allowInsecureRequests] } : {}),
      });
    } catch (err) {
      throw new GatewayError(
        'invalid_request_error',
        blockedByEgress(err)
          ? 'issuer: blocked by the egress policy (an operator allows internal hosts with KEYGATE_EGRESS_ALLOW).'
          : 'issuer: OpenID Connect discovery failed (no valid /.well-known/openid-configuration for this issuer).',
      );
    }
  }

  /** The person behind a token response: ID token claims, completed from the userinfo endpoint. */
  async person(
    idp: IdentityProviderRecord,
    config: client.Configuration,
    tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers,
  ): Promise<IdpPerson & { active: boolean }> {
    const claims = tokens.claims();
    if (!claims) throw unreachable();
    const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    const all: Record<string, unknown> = { ...claims, ...info };
    const email = typeof all.email === 'string' ? all.email.toLowerCase() : '';
    // OpenID Connect Core 1.0 §5.1: email_verified is a JSON boolean (read 2026-11-29). Anything but
    // `true` is not an assertion; a value other than absent or `true` is refused outright.
    const emailVerified = all.email_verified === true;
    if (!email || (all.email_verified !== undefined && !emailVerified))
      throw new GatewayError(
        'permission_error',
        'The identity provider did not give a verified email address for this person.',
      );
    const raw = all[idp.groupsClaim];
    const groups = Array.isArray(raw)
      ? raw.filter((g): g is string => typeof g === 'string')
      : typeof raw === 'string'
        ? [raw]
        : [];
    const name = typeof all.name === 'string' && all.name ? all.name : email;
    return { subject: claims.sub, email, emailVerified, name, groups, active: all.active !== false };
  }
}

/** Somewhere in the error's causes, the egress policy refused the connection. */
function blockedByEgress(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) if (e instanceof EgressBlockedError) return true;
  return false;
}

/** The provider said no (a refresh token revoked, a person disabled): OAuth's error response. */
export function refusedByProvider(err: unknown): string | null {
  if (err instanceof client.ResponseBodyError) return err.error;
  if (err instanceof client.WWWAuthenticateChallengeError)
    return err.response.status === 401 ? 'invalid_token' : null;
  return null;
}
