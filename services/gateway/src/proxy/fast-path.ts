import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { KeyKind } from '../auth/keys';
import { discardUnread } from '../lib/body-limit';
import { presentedCredential } from '../lib/credentials';
import { errorBody, GatewayError, newRequestId } from '../lib/errors';
import type { Logger } from '../lib/logger';
import { proxyCall, type ProxyOptions } from './routes';

export interface FastPathDeps {
  /** The same options the app's proxy routes get. */
  proxy: ProxyOptions;
  logger: Logger;
  /** The access line of each request (metrics/access-log.ts). */
  access: {
    write(
      log: Logger,
      requestId: string,
      req: { method: string; path: string; status: number; startedAt: number },
      now: number,
    ): void;
  };
}

const APP_KEYS: readonly KeyKind[] = ['live', 'test'];
const PATH = '/v1/messages';

/**
 * `POST /v1/messages`, nearly all of a gateway's traffic, served from Node's request event:
 * the same request id, key check, proxy call, error shape and access line as through the app
 * (app.ts: its request-id middleware, keyAuth, the proxy route, onError), without a web
 * Request, Hono's context and its middleware chain for each call. Any other request (and this
 * one with a query string) goes to the app. Returns false for requests it does not take.
 */
export function messagesFastPath(deps: FastPathDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  return function fastPath(req, res) {
    if (req.url !== PATH || req.method !== 'POST') return false;
    void serve(req, res, deps);
    return true;
  };
}

async function serve(req: IncomingMessage, res: ServerResponse, deps: FastPathDeps): Promise<void> {
  const requestId = newRequestId();
  const startedAt = performance.now();
  const log = deps.logger.child({ requestId });
  try {
    const h = req.headers;
    const token = presentedCredential(h.authorization, h['x-api-key'] as string | undefined);
    const principal = await deps.proxy.resolver.resolve(token, APP_KEYS, req.socket.remoteAddress ?? '');
    await proxyCall(req, res, principal, requestId, startedAt, 'messages', undefined, deps.proxy);
  } catch (err) {
    answerError(req, res, err, requestId, log);
  }
  deps.access.write(
    log,
    requestId,
    { method: 'POST', path: PATH, status: res.statusCode, startedAt },
    performance.now(),
  );
}

/** What app.ts's onError does through Hono, on the Node response. */
function answerError(
  req: IncomingMessage,
  res: ServerResponse,
  err: unknown,
  requestId: string,
  log: Logger,
): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.destroy();
    return;
  }
  let refusal: GatewayError;
  if (err instanceof GatewayError) refusal = err;
  else {
    const error = err instanceof Error ? err : new Error(String(err));
    log.error('unhandled error', { error, stack: error.stack });
    refusal = new GatewayError('api_error', 'Internal server error.');
  }
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'request-id': requestId,
    ...refusal.headers,
  };
  if (refusal.type === 'request_too_large') headers.connection = 'close';
  // Refused before its body was read (a wrong key on a large upload): the answer closes the
  // connection and the rest is discarded after it, so the client reads the answer, not a reset.
  if (discardUnread(req)) headers.connection = 'close';
  res.writeHead(refusal.status, headers);
  res.end(errorBody(refusal.type, refusal.message, requestId));
}
