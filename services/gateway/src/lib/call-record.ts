import type { ProviderUsage } from '@keygate/protocol';

/** One call through the gateway, successful or not, as the call log keeps it. */
export interface CallRecord {
  id: string;
  accountId: string;
  keyId: string | null;
  memberId: string | null;
  app: string | null;
  environment: string | null;
  groupId: string | null;
  /** The client, when its headers name it: 'claude_code', else null. */
  client: string | null;
  endpoint: string;
  model: string | null;
  stream: boolean;
  status: number;
  errorType: string | null;
  usage: ProviderUsage | null;
  upstreamMessageId: string | null;
  upstreamRequestId: string | null;
  retryCount: number;
  latencyMs: number;
  ttfbMs: number | null;
  partial: boolean;
  /** output_tokens is the gateway's estimate: the stream ended before the provider's final count. */
  estimated: boolean;
  /** Billed through the Message Batches API: the catalog's batch multiplier applies. */
  batch?: boolean;
  /** Milliseconds spent in the gateway before the answer's headers went out, the upstream's time left out. */
  overheadMs?: number | null;
  createdAt: Date;
  /** Claude Code's subagent of the call and its parent (x-claude-code-agent-id / -parent-agent-id). */
  agentId?: string | null;
  parentAgentId?: string | null;
  /** Bytes of the request and the answer, for calls that carry bytes rather than tokens (files). */
  requestBytes?: number | null;
  responseBytes?: number | null;
  /** The rule that refused the call before it went upstream (GatewayError.reason), else null. */
  refusal?: string | null;
  /**
   * A test key's call (`kg_test_…`, answered by the emulator): it costs $0 everywhere (pages,
   * reports, the call log) and counts toward no spend limit, budget or invoice.
   */
  test?: boolean;
  /** The account's upstream that served the call (upstreams/); absent when its provider key is its only one. */
  upstream?: string | null;
}
