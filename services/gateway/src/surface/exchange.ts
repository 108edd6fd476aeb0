import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { answeredRecord, type CallResult } from '../lib/call-record';
import { GatewayError } from '../lib/errors';
import { unreachable } from '../proxy/call-result';
import type { ForwardCall, OutgoingCall, UpstreamAttempt, UpstreamRequest } from '../proxy/forward';
import { clientHeaders } from '../proxy/headers';
import { upstreamRequest } from '../proxy/upstream-request';
import type { ProxyOptions } from '../proxy/routes';

/** An upstream answer read whole: the small JSON answers of the control endpoints. */
export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  upstreamRequestId: string | null;
  /** The account upstream that answered (its label is the call's upstream); none for the provider key alone. */
  via?: UpstreamAttempt | null;
}

const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/**
 * Sends one call upstream and reads its answer whole (bounded), for the endpoints whose answer
 * Keygate must read or rewrite (ownership, `results_url`). `body` may stream (an upload).
 */
export async function exchange(
  call: ForwardCall,
  opts: Pick<ProxyOptions, 'dispatcher' | 'timeoutMs'>,
  body: Buffer | Readable | null,
  length: number | null,
): Promise<Answer> {
  let res: Dispatcher.ResponseData;
  let answered: UpstreamAttempt | null = null;
  const out = upstreamRequest(
    call.req.headers,
    call.path,
    null,
    Buffer.isBuffer(body) ? body.length : length,
    {
      auth: 'x-api-key',
      credential: call.target.apiKey,
    },
  );
  const via = call.target.via;
  // An account's upstreams build their own request; the options above are the provider key's.
  const request = via
    ? () =>
        viaChain(call, opts, via, body).then((r) => {
          answered = r.attempt;
          return r.res;
        })
    : (o: Dispatcher.RequestOptions) => opts.dispatcher.request(o);
  try {
    res = await request({
      origin: call.target.baseUrl,
      path: out.path,
      method: call.req.method as Dispatcher.HttpMethod,
      headers: out.headers,
      body,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    const code = (err as { code?: string }).code ?? '';
    if (code.includes('TIMEOUT'))
      throw new GatewayError(
        'timeout_error',
        `The provider did not answer within ${Math.round(opts.timeoutMs / 1000)} s.`,
      );
    throw new GatewayError(
      'api_error',
      'Could not reach the provider. The request was not processed; it is safe to retry.',
      { status: 502, headers: { 'x-should-retry': 'true' } },
    );
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      res.body.destroy();
      throw new GatewayError(
        'api_error',
        'The provider answered with more than Keygate reads for this endpoint.',
      );
    }
    chunks.push(chunk as Buffer);
  }
  const rid = res.headers['request-id'];
  return {
    status: res.statusCode,
    headers: res.headers,
    body: Buffer.concat(chunks, size),
    upstreamRequestId: (Array.isArray(rid) ? rid[0] : rid) ?? null,
    via: answered,
  };
}

/** Writes an answer (its body possibly rewritten) to the client and records the call. */
export function relay(
  call: ForwardCall,
  opts: Pick<ProxyOptions, 'record'>,
  answer: Answer,
  body: Buffer = answer.body,
  extra: Partial<CallResult> = {},
): void {
  const headers = clientHeaders(answer.headers, call.requestId);
  delete headers['content-length'];
  delete headers['content-encoding'];
  headers['content-length'] = String(body.length);
  call.res.writeHead(answer.status, headers);
  call.res.end(body);
  opts.record(
    answeredRecord(call, answer.status, answer.status >= 400 ? errorTypeOf(body) : null, {
      upstreamRequestId: answer.upstreamRequestId,
      responseBytes: body.length,
      upstream: answer.via?.label ?? null,
      ...extra,
    }),
  );
}

function errorTypeOf(body: Buffer): string {
  try {
    return JSON.parse(body.toString('utf8'))?.error?.type ?? 'api_error';
  } catch {
    return 'api_error';
  }
}

/** The JSON of a successful answer, or null. */
export function jsonOf(answer: Answer): Record<string, any> | null {
  if (answer.status !== 200) return null;
  try {
    const value = JSON.parse(answer.body.toString('utf8'));
    return value && typeof value === 'object' ? value : null;
  } catch {
    return null;
  }
}

/**
 * The account's upstreams in order, as forward.ts tries them: the next one on a refused
 * connection or a 5xx, while the body can be sent again (an upload streams once: no failover).
 */
async function viaChain(
  call: ForwardCall,
  opts: Pick<ProxyOptions, 'timeoutMs'>,
  first: UpstreamAttempt,
  body: Buffer | Readable | null,
): Promise<{ res: Dispatcher.ResponseData; attempt: UpstreamAttempt }> {
  const resendable = body === null || Buffer.isBuffer(body);
  let attempt = first;
  for (;;) {
    const next = attempt.next;
    const last = !resendable || next === null;
    const out = await attempt.request({ ...call, body: Buffer.isBuffer(body) ? body : call.body });
    try {
      const res = await sendTo(
        attempt,
        out,
        call.req.method,
        opts.timeoutMs,
        Buffer.isBuffer(body) ? out.body : body,
      );
      if (res.statusCode < 500 || last) return { res, attempt };
      await res.body.dump();
    } catch (err) {
      if (last || !unreachable(err)) throw err;
    }
    attempt = next!;
  }
}

/** One request to one upstream, built and signed by it (upstreams/request.ts), sent on its own dispatcher. */
export async function requestVia(
  attempt: UpstreamAttempt,
  call: OutgoingCall,
  timeoutMs: number,
): Promise<Dispatcher.ResponseData> {
  const out = await attempt.request(call);
  return sendTo(attempt, out, call.req.method, timeoutMs, out.body);
}

function sendTo(
  attempt: UpstreamAttempt,
  out: UpstreamRequest,
  method: string | undefined,
  timeoutMs: number,
  body: Buffer | Readable | null,
): Promise<Dispatcher.ResponseData> {
  return attempt.dispatcher.request({
    origin: attempt.origin,
    path: out.path,
    method: (method ?? 'GET') as Dispatcher.HttpMethod,
    headers: out.headers,
    body,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
}
