import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { GatewayError } from './errors';

/**
 * What each route family reads at most, enforced while reading by pipeline/body-reader.ts (a
 * declared length over it is refused before a byte is read): nothing buffers an unbounded body.
 * `/v1/messages` has its own streaming limit (KEYGATE_MAX_BODY_BYTES).
 */
export const BODY_LIMITS = {
  /** A token and a CSRF field. */
  signIn: 8 * 1024,
  /** The dashboard's forms: a few short fields each. */
  dashboardForm: 64 * 1024,
  /** Account and operator API bodies: JSON objects of a few fields. */
  api: 1024 * 1024,
  /** The sign-in API (`/idp/v1/…`, no credential): two or three short fields. */
  idp: 16 * 1024,
  /**
   * A Message Batch as sent. The provider takes up to 256 MB or 100,000 requests
   * (https://docs.anthropic.com/en/docs/build-with-claude/message-batches, "Batch limitations",
   * read 2026-11-29), but the gateway parses a batch whole to check each request, and JSON.parse
   * holds the event loop for every tenant: about 180 ms for 32 MB here, 40 to 120 ms for a batch
   * of 7.9 MB. A larger batch is refused naming this limit, to be sent as several batches.
   */
  batch: 8 * 1024 * 1024,
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

/**
 * The 413 for a body refused before it was read whole: the connection lingers, then closes (the
 * rest of the upload is not read, so it cannot carry another request).
 */
export function bodyTooLarge(incoming: IncomingMessage | undefined, message: string): GatewayError {
  lingerOnClose(incoming?.socket);
  return new GatewayError('request_too_large', message, { headers: { connection: 'close' } });
}
