import { claudeGatewayQueries, type ClaudeGatewayQueries } from '../claude-gateway/claude-gateway-queries';
import { identityQueries } from '../identity/identity-queries';
import type { MemberTokenStore } from '../identity/oidc';
import { MemberTokens } from '../identity/tokens';
import { scimQueries } from '../identity-api/scim-queries';
import type { ScimStore } from '../identity-api/scim-routes';
import type { Kernel } from '../kernel/kernel';
import { WorkloadExchange } from './exchange';
import { federationQueries, type FederationQueries } from './federation-queries';
import { IssuerKeys } from './jwks';

/** Identity's queries: its rooms' own (providers and sessions, SCIM, federation, Claude Code's settings) and the kernel's rows it reads. */
export type IdentityStore = MemberTokenStore &
  ScimStore & { federation: FederationQueries; claudeGateway: ClaudeGatewayQueries };

/** Sign-in through accounts' identity providers (member tokens, device flow, SCIM) and workload tokens. */
export interface Identity {
  tokens: MemberTokens;
  /** Workload tokens from an issuer's signed JWT (`POST /v1/oauth/token`). */
  exchange: WorkloadExchange;
  /** What identity's routes read and write. */
  store: IdentityStore;
}

export function installIdentity(kernel: Kernel): Identity {
  const { db, box, egress, clock, config, closer } = kernel;
  const { accounts, keys, invites } = kernel.tenancy;
  const store: IdentityStore = {
    accounts,
    keys,
    invites,
    identity: identityQueries(db.sql),
    scim: scimQueries(db.sql),
    federation: federationQueries(db.sql),
    claudeGateway: claudeGatewayQueries(db.sql),
  };
  const issuerKeys = new IssuerKeys({ egress, clock });
  closer.add(() => issuerKeys.close());
  return {
    tokens: new MemberTokens({
      store,
      box,
      egress,
      clock,
      tokenTtlMs: config.memberTokenTtlMs,
      refreshIdleMs: config.idpRefreshIdleMs,
      publicUrl: config.publicUrl,
    }),
    exchange: new WorkloadExchange(store, issuerKeys, clock),
    store,
  };
}
