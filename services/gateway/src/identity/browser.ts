import { isIP } from 'node:net';
import * as client from 'openid-client';
import { generateKey, hashKey, keyHint } from '../auth/keys';
import { EgressPolicy } from '../lib/egress';
import { GatewayError } from '../lib/errors';
import { newId } from '../lib/ids';
import type { MemberRecord } from '../tenancy/account-queries';
import { refusedByProvider, unreachable } from './oidc';
import { provisionMember } from './provision';
import type { MemberTokens } from './tokens';

/** What the browser keeps between the redirect to the provider and its return (an HttpOnly cookie). */
export interface PendingSignIn {
  account: string;
  state: string;
  nonce: string;
  verifier: string;
}

export const CALLBACK_PATH = '/dashboard/sign-in/idp/callback';

/** The provider's authorization URL (code flow, PKCE S256, state and nonce) and what to keep for the return. */
export async function beginBrowserSignIn(
  tokens: MemberTokens,
  accountId: string,
  origin: string,
): Promise<{ url: URL; pending: PendingSignIn; provider: string }> {
  const account = await tokens.store.accounts.get(accountId);
  if (account?.status !== 'active')
    throw new GatewayError(
      'not_found_error',
      `Account '${accountId}' cannot sign in through an identity provider.`,
    );
  const idp = await tokens.oidc.provider(accountId);
  const config = await tokens.oidc.config(idp);
  await checkAuthorizationEndpoint(tokens.deps.egress, config.serverMetadata().authorization_endpoint);
  const verifier = client.randomPKCECodeVerifier();
  const pending = { account: accountId, state: client.randomState(), nonce: client.randomNonce(), verifier };
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: `${origin}${CALLBACK_PATH}`,
    scope: 'openid email profile',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: pending.state,
    nonce: pending.nonce,
  });
  return { url, pending, provider: idp.name };
}

/** What an egress policy with no operator allowances lets through: public unicast addresses. */
const PUBLIC_ONLY = new EgressPolicy();

/**
 * Where the browser is sent must be a place the gateway itself may reach (the egress policy) and,
 * as OAuth 2.0 requires of the authorization endpoint (RFC 6749 §3.1, RFC 9700 §2.6; read
 * 2026-11-29), https; plain http only to a host the operator allowed by name or address
 * (KEYGATE_EGRESS_ALLOW: a provider inside their network).
 */
async function checkAuthorizationEndpoint(egress: EgressPolicy, endpoint: string | undefined): Promise<void> {
  const refused = () =>
    new GatewayError(
      'invalid_request_error',
      "The identity provider's authorization endpoint is not allowed (it must be https, and pass the egress policy): an admin checks the provider's settings.",
    );
  let url: URL;
  try {
    url = new URL(endpoint ?? '');
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refused();
    await egress.check(url.href);
  } catch {
    throw refused();
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const operatorAllowed = egress.allowsHost(host) || (isIP(host) !== 0 && !PUBLIC_ONLY.allowsAddress(host));
  if (url.protocol === 'https:' || (url.protocol === 'http:' && operatorAllowed)) return;
  throw refused();
}

/**
 * The provider's return: the code is exchanged (state, nonce and PKCE checked by openid-client),
 * the person provisioned, and a sign-in key made for the dashboard session to stand on (its
 * secret is never shown; it expires with the session, and goes with the member).
 */
export async function finishBrowserSignIn(
  tokens: MemberTokens,
  pending: PendingSignIn,
  currentUrl: URL,
  sessionMs: number,
): Promise<{ member: MemberRecord; keyId: string; secretHash: Buffer }> {
  const idp = await tokens.oidc.provider(pending.account);
  const config = await tokens.oidc.config(idp);
  let person: Awaited<ReturnType<MemberTokens['oidc']['person']>>;
  try {
    const grant = await client.authorizationCodeGrant(config, currentUrl, {
      pkceCodeVerifier: pending.verifier,
      expectedState: pending.state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
    person = await tokens.oidc.person(idp, config, grant);
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    if (err instanceof client.AuthorizationResponseError)
      throw new GatewayError('permission_error', `The identity provider refused the sign-in (${err.error}).`);
    if (refusedByProvider(err) || err instanceof client.ClientError)
      throw new GatewayError('authentication_error', 'The sign-in could not be completed: start it again.');
    throw unreachable();
  }
  const member = await provisionMember(tokens.store, idp, person);
  const secret = generateKey('live');
  const key = await tokens.store.keys.create(
    {
      id: newId('key'),
      accountId: idp.accountId,
      memberId: member.id,
      kind: 'live',
      name: `dashboard sign-in of ${member.email} (${idp.name})`,
      app: null,
      environment: null,
      hint: keyHint(secret),
      expiresAt: new Date(tokens.deps.clock() + sessionMs),
      createdBy: 'idp',
    },
    hashKey(secret),
  );
  return { member, keyId: key.id, secretHash: hashKey(secret) };
}
