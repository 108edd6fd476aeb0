import { MemberTokens } from '../identity/tokens';
import type { Kernel } from '../kernel/kernel';
import { WorkloadExchange } from './exchange';
import { IssuerKeys } from './jwks';

/** Sign-in through accounts' identity providers (member tokens, device flow, SCIM) and workload tokens. */
export interface Identity {
  tokens: MemberTokens;
  /** Workload tokens from an issuer's signed JWT (`POST /v1/oauth/token`). */
  exchange: WorkloadExchange;
}

export function installIdentity(kernel: Kernel): Identity {
  const { store, box, egress, clock, config, closer } = kernel;
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
  };
}
