import type { ProviderUsage } from '@keygate/protocol';
import { performance } from 'node:perf_hooks';

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

/*
 * The one place a call record is built. Every endpoint's record comes from one of the
 * constructors below, so each fills attribution (account, key, member, app, environment),
 * timing, the model and, for a refusal, its reason the same way.
 */

/** What the request tells about a call, known before it goes upstream (the proxy's ForwardCall is one). */
export interface CallFacts {
  principal: {
    key: {
      id: string;
      accountId: string;
      memberId: string | null;
      app: string | null;
      environment: string | null;
      kind: string;
    };
  };
  requestId: string;
  groupId: string | null;
  client: string | null;
  endpoint: string;
  model: string | null;
  stream: boolean;
  retryCount: number;
  /** performance.now() when the call arrived. */
  startedAt: number;
  createdAt: Date;
  agentId?: string | null;
  parentAgentId?: string | null;
}

/** How a call ended. */
export type CallResult = Pick<
  CallRecord,
  | 'model'
  | 'status'
  | 'errorType'
  | 'usage'
  | 'estimated'
  | 'upstreamMessageId'
  | 'upstreamRequestId'
  | 'ttfbMs'
  | 'partial'
> &
  Partial<Pick<CallRecord, 'requestBytes' | 'responseBytes' | 'upstream' | 'refusal'>> & {
    overheadMs?: number | null;
  };

/** A call that went upstream (or was answered by Keygate): its facts and how it ended. One literal: this runs once per call. */
export function callRecord(call: CallFacts, result: CallResult): CallRecord {
  const { key } = call.principal;
  return {
    id: call.requestId,
    accountId: key.accountId,
    keyId: key.id,
    memberId: key.memberId,
    app: key.app,
    environment: key.environment,
    groupId: call.groupId,
    client: call.client,
    endpoint: call.endpoint,
    stream: call.stream,
    retryCount: call.retryCount,
    latencyMs: performance.now() - call.startedAt,
    createdAt: call.createdAt,
    agentId: call.agentId ?? null,
    parentAgentId: call.parentAgentId ?? null,
    model: result.model,
    status: result.status,
    errorType: result.errorType,
    usage: result.usage,
    estimated: result.estimated,
    upstreamMessageId: result.upstreamMessageId,
    upstreamRequestId: result.upstreamRequestId,
    ttfbMs: result.ttfbMs,
    partial: result.partial,
    overheadMs: result.overheadMs ?? null,
    // Undefined when the call carries no byte counts: JSON (the spool) leaves them out.
    requestBytes: result.requestBytes,
    responseBytes: result.responseBytes,
    ...(result.upstream ? { upstream: result.upstream } : {}),
    ...(result.refusal ? { refusal: result.refusal } : {}),
    ...(key.kind === 'test' ? { test: true } : {}),
  };
}

/** A call answered without the provider's usage: Keygate's own answer, or a relayed non-message answer. */
export function answeredRecord(
  call: CallFacts,
  status: number,
  errorType: string | null,
  extra: Partial<CallResult> = {},
): CallRecord {
  return callRecord(call, {
    model: call.model,
    status,
    errorType,
    usage: null,
    estimated: false,
    upstreamMessageId: null,
    upstreamRequestId: null,
    ttfbMs: null,
    partial: false,
    ...extra,
  });
}

/** A call refused before it went upstream, with the rule that refused it (GatewayError.reason). */
export function refusedRecord(
  call: CallFacts,
  err: { status: number; type: string; reason?: string | null },
): CallRecord {
  return answeredRecord(call, err.status, err.type, err.reason ? { refusal: err.reason } : {});
}

/** A call whose client left before it was answered (499, as nginx logs it). */
export function clientClosedRecord(call: CallFacts): CallRecord {
  return answeredRecord(call, 499, 'client_closed', { partial: true });
}

/** Who a call the gateway records on its own (a batch result, a session's usage) is attributed to. */
export interface CallOwner {
  accountId: string;
  keyId: string | null;
  memberId: string | null;
  app: string | null;
  environment: string | null;
}

/** A call Keygate learns of after the request that caused it: a batch's result, a session's growth. */
export interface AccruedCall {
  id: string;
  owner: CallOwner;
  /** The batch or session it belongs to. */
  groupId: string;
  endpoint: string;
  model: string | null;
  status: number;
  errorType: string | null;
  usage: ProviderUsage | null;
  upstreamMessageId: string | null;
  latencyMs: number;
  createdAt: Date;
  batch?: boolean;
  /** The account upstream that served it (a batch made there); absent for the provider key. */
  upstream?: string | null;
}

export function accruedRecord(a: AccruedCall): CallRecord {
  return {
    id: a.id,
    accountId: a.owner.accountId,
    keyId: a.owner.keyId,
    memberId: a.owner.memberId,
    app: a.owner.app,
    environment: a.owner.environment,
    groupId: a.groupId,
    client: null,
    endpoint: a.endpoint,
    ...(a.batch ? { batch: true } : {}),
    model: a.model,
    stream: false,
    status: a.status,
    errorType: a.errorType,
    usage: a.usage,
    upstreamMessageId: a.upstreamMessageId,
    upstreamRequestId: null,
    retryCount: 0,
    latencyMs: a.latencyMs,
    ttfbMs: null,
    partial: false,
    estimated: false,
    createdAt: a.createdAt,
    ...(a.upstream ? { upstream: a.upstream } : {}),
  };
}
