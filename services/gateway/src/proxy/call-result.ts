import { GatewayError } from '../lib/errors';

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
