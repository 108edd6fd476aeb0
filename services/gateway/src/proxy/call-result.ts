import { performance } from 'node:perf_hooks';
import type { CallRecord } from '../lib/call-record';
import { GatewayError } from '../lib/errors';
import type { ForwardCall } from './forward';

const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

type Result = Pick<
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
  Partial<Pick<CallRecord, 'requestBytes' | 'responseBytes'>> & { overheadMs?: number | null };

/** The call log entry for a call and how it ended. One literal: this runs once per call. */
export function callRecord(call: Omit<ForwardCall, 'target' | 'req' | 'res'>, result: Result): CallRecord {
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
    ...(key.kind === 'test' ? { test: true } : {}),
  };
}

export function codeOf(err: unknown): string | undefined {
  const e = err as { code?: string; cause?: { code?: string } };
  return e?.code ?? e?.cause?.code;
}

/** The upstream could not be reached or dropped the connection before answering. */
export function unreachable(err: unknown): boolean {
  const code = codeOf(err);
  return code !== undefined && (UNREACHABLE.has(code) || code === 'EGRESS_BLOCKED');
}

export function upstreamFailure(err: unknown, timeoutMs: number): GatewayError {
  if (err instanceof GatewayError) return err;
  const code = codeOf(err);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return readTimeout(timeoutMs);
  const reason = code && UNREACHABLE.has(code) ? code : 'connection failed';
  return new GatewayError(
    'api_error',
    `Could not reach the provider (${reason}). The request was not processed; it is safe to retry.`,
    {
      status: 502,
      headers: { 'x-should-retry': 'true' },
    },
  );
}

/** The provider sent nothing for the read timeout, before its answer or mid-stream. */
export function readTimeout(timeoutMs: number, midStream = false): GatewayError {
  const s = Math.round(timeoutMs / 1000);
  return new GatewayError(
    'timeout_error',
    midStream
      ? `The provider sent nothing for ${s} s mid-stream; the gateway ended the stream.`
      : `The provider did not answer within ${s} s.`,
  );
}
