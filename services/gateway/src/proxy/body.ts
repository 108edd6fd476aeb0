import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../lib/errors';

// Above this declared size the body is copied into one buffer as it arrives, rather than
// kept as chunks and concatenated at the end (twice the body's size at the peak). Node's
// parser frames the body by content-length, so exactly that many bytes arrive before 'end'.
const PREALLOCATE = 1024 * 1024;

/** Reads a request body into one buffer, refusing it as soon as it passes `limit`. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  const into = Number.isSafeInteger(declared) && declared >= PREALLOCATE ? Buffer.allocUnsafe(declared) : null;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limit) {
        cleanup();
        reject(tooLarge(limit));
        return;
      }
      if (into) chunk.copy(into, size);
      else chunks.push(chunk);
      size += chunk.length;
    };
    const onEnd = () => {
      cleanup();
      if (into) resolve(into);
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError('request_too_large', `Request exceeds the maximum size of ${Math.round(limit / 1024 / 1024)} MB.`);
}
