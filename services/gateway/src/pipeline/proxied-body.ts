import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../lib/errors';
import { BodyCollector } from './body-collector';

/** The client went away before its request body arrived in full. */
export class ClientGoneError extends Error {
  constructor() {
    super('client closed the connection before sending the whole body');
  }
}

export interface ReadBodyOptions {
  limit: number;
  /** How long the body may pause between bytes before the request is refused. */
  idleMs: number;
}

/** Reads a request body into one buffer, refusing it as soon as it passes `limit` or stalls. */
export function readBody(req: IncomingMessage, opts: ReadBodyOptions): Promise<Buffer> {
  const { limit, idleMs } = opts;
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  if (req.destroyed || req.readableAborted) return Promise.reject(new ClientGoneError());
  return new Promise((resolve, reject) => {
    const body = new BodyCollector(declared);
    const timer = setTimeout(onIdle, idleMs);
    function onIdle() {
      cleanup();
      reject(
        new GatewayError(
          'timeout_error',
          `The request body stalled for ${Math.round(idleMs / 1000)} s; send it without pauses.`,
          { status: 408 },
        ),
      );
    }
    const onData = (chunk: Buffer) => {
      if (body.size + chunk.length > limit) {
        cleanup();
        reject(tooLarge(limit));
        return;
      }
      timer.refresh();
      body.add(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(body.body());
    };
    // A request stream errors only when its connection broke ('aborted', ECONNRESET).
    const onError = () => {
      cleanup();
      reject(new ClientGoneError());
    };
    const onClose = () => {
      cleanup();
      reject(new ClientGoneError());
    };
    const cleanup = () => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError(
    'request_too_large',
    `Request exceeds the maximum size of ${Math.round(limit / 1024 / 1024)} MB.`,
  );
}
