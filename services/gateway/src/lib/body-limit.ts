import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { GatewayError } from './errors';

/**
 * What each route family reads at most, enforced while reading (a declared length over it is
 * refused before a byte is read): nothing buffers an unbounded body. The proxy's routes have
 * their own streaming limit (KEYGATE_MAX_BODY_BYTES).
 */
export const BODY_LIMITS = {
  /** A token and a CSRF field. */
  signIn: 8 * 1024,
  /** The dashboard's forms: a few short fields each. */
  dashboardForm: 64 * 1024,
  /** Account and operator API bodies: JSON objects of a few fields. */
  api: 1024 * 1024,
  /** Stripe's event payloads are a few KB; an invoice with many lines stays well under this. */
  stripeWebhook: 1024 * 1024,
  /** One OTLP export as sent (Claude Code's batches are a few KB to tens of KB). */
  otlp: 4 * 1024 * 1024,
  /** The same export after gunzip: a small gzip body cannot inflate past this. */
  otlpInflated: 16 * 1024 * 1024,
} as const;

/** How long a refused upload's connection stays open (reading and discarding) after the answer. */
const LINGER_MS = 1_000;

/**
 * Closing a connection while the client is still sending resets it, and a reset can drop the
 * 413 the client has not read yet. So after the answer the connection is half-closed (no more
 * answers), what still arrives is discarded, and the socket is destroyed after LINGER_MS or
 * when the client closes, whichever comes first.
 */
export function lingerOnClose(socket: Socket | undefined): void {
  if (!socket) return;
  socket.destroySoon = function lingerThenClose(this: Socket) {
    this.end();
    this.resume();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once('close', () => clearTimeout(timer));
  };
}

/**
 * For a request answered before its body was read (a refusal on a large upload): the rest is
 * discarded and the connection lingers, then closes. True when it did: the answer must then say
 * `connection: close`. False for a request already read whole.
 */
export function discardUnread(req: IncomingMessage): boolean {
  if (req.complete || req.readableEnded) return false;
  lingerOnClose(req.socket);
  req.resume();
  return true;
}

/** Refuses a body over `maxBytes` with 413 request_too_large (HTML on the dashboard, by its error handler). */
export function limitBody(maxBytes: number): MiddlewareHandler {
  const limit = bodyLimit({
    maxSize: maxBytes,
    onError: (c) => {
      lingerOnClose((c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket);
      throw new GatewayError(
        'request_too_large',
        `Request body too large: this route takes at most ${maxBytes} bytes.`,
        // The rest of the upload is not read: the connection cannot carry another request.
        { headers: { connection: 'close' } },
      );
    },
  });
  return async function limitBody(c, next) {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    return limit(c, next);
  };
}
