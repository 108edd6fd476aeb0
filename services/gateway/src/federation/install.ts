import { claudeGatewayQueries, type ClaudeGatewayQueries } from '../claude-gateway/claude-gateway-queries';
import { MemberTokens } from '../identity/tokens';
import type { Kernel } from '../kernel/kernel';
import { WorkloadExchange } from './exchange';
import { IssuerKeys } from './jwks';

/** Sign-in through accounts' identity providers (member tokens, device flow, SCIM) and workload tokens. */
export interface Identity {
  tokens: MemberTokens;
  /** Workload tokens from an issuer's signed JWT (`POST /v1/oauth/token`). */
  exchange: WorkloadExchange;
  /** The managed settings Claude Code gets through an account's gateway. */
  claudeGateway: ClaudeGatewayQueries;
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
    claudeGateway: claudeGatewayQueries(store.db.sql),
  };
}
