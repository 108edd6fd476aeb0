import { createHash } from 'node:crypto';
import * as client from 'openid-client';
import { generateKey, hashKey, keyHint } from '../auth/keys';
import { GatewayError } from '../lib/errors';
import { newId, randomBase62 } from '../lib/ids';
import type { IdentityProviderRecord, IdpPerson } from './identity-queries';
import type { MemberRecord } from '../tenancy/account-queries';
import type { RefreshRefusal } from './idp-session-queries';
import { DevicePolls } from './device-polls';
import { OidcClients, refusedByProvider, SCOPE, unreachable, type IdentityDeps } from './oidc';
import { domainAllowed, provisionMember } from './provision';

/** The previous member token keeps working this long after a refresh (a call in flight with it). */
const ROTATION_GRACE_MS = 30_000;
/** A spent refresh token presented again this soon gets its first answer again (two windows racing). */
export const REFRESH_REUSE_WINDOW_MS = 30_000;
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** A device sign-in not renewed for this long ends (KEYGATE_IDP_REFRESH_IDLE_MS). */
export const DEFAULT_REFRESH_IDLE_MS = 30 * 86_400_000;

/** What `keygate token` receives: a member token for the gateway, and what renews it. */
export interface IssuedToken {
  token: string;
  expires_at: string;
  refresh_token?: string;
  member_id: string;
  email: string;
}

const refreshHash = (token: string) =>
  createHash('sha256').update('keygate-idp-refresh\0').update(token).digest();
const newRefreshToken = () => `kgr_${randomBase62(43)}`;

const ENDED: Record<RefreshRefusal, string> = {
  unknown: 'this refresh token is not known',
  reused: 'this refresh token was already used, so the sign-in was ended in case it was copied',
  idle: 'it was not renewed for too long',
  removed: 'an admin removed you',
  ended: 'it was ended',
  deprovisioned: "your company's identity provider no longer signs you in",
  'provider-refused': "your company's identity provider no longer signs you in",
};

const gone = (why: RefreshRefusal, reason?: string) =>
  new GatewayError(
    'authentication_error',
    `This sign-in has ended (${reason ?? ENDED[why]}): run \`keygate token\` again to sign in.`,
  );

/**
 * Claude Code without long-lived keys: the OAuth 2.0 device authorization grant (RFC 8628)
 * against the account's provider, run by Keygate so the helper needs only the gateway's URL and
 * the account id; then short-lived member tokens (keys that expire, resolved like any key) that a
 * refresh at the provider renews, or ends when the provider no longer knows the person.
 */
export class MemberTokens {
  readonly deps: IdentityDeps;
  readonly oidc: OidcClients;
  readonly #polls: DevicePolls;

  get store() {
    return this.deps.store;
  }

  constructor(deps: IdentityDeps, oidc = new OidcClients(deps)) {
    this.deps = deps;
    this.oidc = oidc;
    this.#polls = new DevicePolls(deps.clock);
  }

  async startDevice(accountId: string) {
    const idp = await this.oidc.provider(accountId);
    const config = await this.oidc.config(idp);
    try {
      const d = await client.initiateDeviceAuthorization(config, { scope: SCOPE });
      this.#polls.started(accountId, d.device_code, d.interval ?? 5, d.expires_in);
      return {
        provider: idp.name,
        device_code: d.device_code,
        user_code: d.user_code,
        verification_uri: d.verification_uri,
        verification_uri_complete: d.verification_uri_complete ?? null,
        expires_in: d.expires_in,
        interval: d.interval ?? 5,
      };
    } catch (err) {
      if (refusedByProvider(err) === 'unauthorized_client')
        throw new GatewayError(
          'invalid_request_error',
          "The identity provider does not allow the device flow for Keygate's client: enable the device authorization grant there.",
        );
      throw unreachable();
    }
  }

  /**
   * One poll of the provider's token endpoint: still pending, slow down, or the first member
   * token. A poll sooner than the interval is answered `slow_down` here, the provider not asked.
   */
  async pollDevice(
    accountId: string,
    deviceCode: string,
  ): Promise<
    { status: 'pending' } | { status: 'slow_down'; interval: number } | ({ status: 'ok' } & IssuedToken)
  > {
    const early = this.#polls.admit(accountId, deviceCode);
    if (early !== null) return { status: 'slow_down', interval: early };
    const idp = await this.oidc.provider(accountId);
    const config = await this.oidc.config(idp);
    let tokens: Awaited<ReturnType<typeof client.genericGrantRequest>>;
    try {
      tokens = await client.genericGrantRequest(config, DEVICE_GRANT, { device_code: deviceCode });
    } catch (err) {
      const said = refusedByProvider(err);
      if (said === 'authorization_pending') return { status: 'pending' };
      if (said === 'slow_down')
        return { status: 'slow_down', interval: this.#polls.slowDown(accountId, deviceCode) };
      if (said === 'access_denied' || said === 'expired_token' || said === 'invalid_grant')
        this.#polls.finished(accountId, deviceCode);
      if (said === 'access_denied')
        throw new GatewayError('permission_error', 'The sign-in was denied at the identity provider.');
      if (said === 'expired_token' || said === 'invalid_grant')
        throw new GatewayError(
          'invalid_request_error',
          'This device code has expired or was already used: run `keygate token` again.',
        );
      throw unreachable();
    }
    this.#polls.finished(accountId, deviceCode);
    const person = await this.#person(idp, config, tokens);
    const member = await provisionMember(this.deps.store, idp, person);
    return { status: 'ok', ...(await this.#startSession(idp, member, person, tokens.refresh_token ?? null)) };
  }

  async #person(
    idp: IdentityProviderRecord,
    config: client.Configuration,
    tokens: Parameters<OidcClients['person']>[2],
  ): Promise<IdpPerson> {
    try {
      return await this.oidc.person(idp, config, tokens);
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      throw unreachable();
    }
  }

  async #startSession(
    idp: IdentityProviderRecord,
    member: MemberRecord,
    person: IdpPerson,
    providerRefresh: string | null,
  ): Promise<IssuedToken> {
    const sessionId = newId('idps');
    const refresh = newRefreshToken();
    const token = generateKey('live');
    const expiresAt = new Date(this.deps.clock() + this.deps.tokenTtlMs);
    await this.deps.store.identity.startSession(
      {
        id: sessionId,
        accountId: idp.accountId,
        memberId: member.id,
        subject: person.subject,
        refreshHash: refreshHash(refresh),
        providerRefreshSealed: providerRefresh
          ? this.deps.box.seal(providerRefresh, { purpose: 'idp-refresh-token', row: sessionId })
          : null,
      },
      {
        id: newId('key'),
        accountId: idp.accountId,
        memberId: member.id,
        kind: 'live',
        name: `Claude Code token of ${member.email} (${idp.name} sign-in)`,
        app: 'claude-code',
        environment: null,
        hint: keyHint(token),
        expiresAt,
        createdBy: 'idp',
      },
      hashKey(token),
    );
    return {
      token,
      expires_at: expiresAt.toISOString(),
      refresh_token: refresh,
      member_id: member.id,
      email: member.email,
    };
  }

  /**
   * A new member token and a new refresh token for a device session (the one presented is spent;
   * presented again, it ends the session), after the provider renewed its own refresh token and
   * still knows the person. Only the provider's explicit refusal of the grant (invalid_grant) or
   * `active: false` deprovisions the member, and never the account's last admin; an outage, a
   * provider that is no longer connected or any other answer only fails or ends this sign-in.
   */
  async refresh(refreshToken: string): Promise<IssuedToken> {
    if (!refreshToken.startsWith('kgr_')) throw gone('unknown');
    const idleMs = this.deps.refreshIdleMs ?? DEFAULT_REFRESH_IDLE_MS;
    const result = await this.deps.store.identity.refreshSession(
      refreshHash(refreshToken),
      idleMs,
      REFRESH_REUSE_WINDOW_MS,
      async (s) => {
        const idp = await this.deps.store.identity.provider(s.accountId);
        const deprovision = (reason: string) => ({
          kind: 'deprovision' as const,
          audit: { actor: 'idp', action: 'member.deprovisioned', targetId: s.memberId, details: { reason } },
        });
        const end = (reason: string) => ({ kind: 'end' as const, reason });
        if (!idp) return end("the account's identity provider was disconnected");
        if (!s.providerRefreshSealed) return end('the identity provider gave no refresh token');
        const config = await this.oidc.config(idp);
        const stored = this.deps.box.open(s.providerRefreshSealed, {
          purpose: 'idp-refresh-token',
          row: s.id,
        });
        let person: IdpPerson & { active: boolean };
        let next: string | null;
        try {
          const tokens = await client.refreshTokenGrant(config, stored);
          next = tokens.refresh_token ?? null;
          person = await this.oidc.person(idp, config, tokens);
        } catch (err) {
          // RFC 6749 §5.2: invalid_grant is the provider saying this grant is over (the person
          // disabled or removed there, the grant revoked). Anything else fails only this refresh.
          if (refusedByProvider(err) === 'invalid_grant')
            return deprovision('provider refused: invalid_grant');
          if (err instanceof GatewayError) throw err;
          throw unreachable();
        }
        if (!person.active) return deprovision('inactive at the provider');
        if (person.subject !== s.subject) return end('the identity provider named another person');
        if (!domainAllowed(idp, person.email)) return end("the email left the account's allowed domains");
        await this.deps.store.identity.setGroups(s.memberId, person.groups);
        const token = generateKey('live');
        const refresh = newRefreshToken();
        const expiresAt = new Date(this.deps.clock() + this.deps.tokenTtlMs);
        const value = {
          token,
          refresh_token: refresh,
          expires_at: expiresAt.toISOString(),
          email: person.email,
        };
        return {
          kind: 'renew' as const,
          providerRefreshSealed: next
            ? this.deps.box.seal(next, { purpose: 'idp-refresh-token', row: s.id })
            : null,
          refreshHash: refreshHash(refresh),
          hash: hashKey(token),
          hint: keyHint(token),
          expiresAt,
          graceMs: ROTATION_GRACE_MS,
          value,
          answerSealed: this.deps.box.seal(JSON.stringify(value), {
            purpose: 'idp-refresh-answer',
            row: s.id,
          }),
        };
      },
    );
    if ('refused' in result) throw gone(result.refused, result.reason);
    const value =
      'answerSealed' in result
        ? (JSON.parse(
            this.deps.box.open(result.answerSealed, {
              purpose: 'idp-refresh-answer',
              row: result.session.id,
            }),
          ) as Omit<IssuedToken, 'member_id'>)
        : result.value;
    return { ...value, member_id: result.session.memberId };
  }
}
