import type { Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from './logger';

export interface ServerLimits {
  headersTimeoutMs: number;
  /** The whole request (headers and body); 0: no bound. */
  requestTimeoutMs: number;
  maxSocketsPerAddress: number;
}

/**
 * Node's own timeouts for receiving a request: the request line and headers within
 * `headersTimeoutMs`, the whole request within `requestTimeoutMs`. Answers (streams) are not
 * bounded by them. Node checks them every `connectionsCheckingInterval` (30 s by default),
 * which would let a slow client hold its socket for that much longer.
 */
export function serverOptions(limits: ServerLimits): ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4))),
    keepAliveTimeout: 65_000,
  };
}

export interface SocketCap {
  /** Connections closed because their address already held the maximum. */
  readonly refused: number;
  /** Open connections of one address. */
  openFrom(address: string): number;
}

const WARN_EVERY_MS = 60_000;

/**
 * Closes a connection at once when its address already holds `max` open ones: one client
 * cannot take every socket the process may open. Logged once a minute per address.
 */
export function capSocketsPerAddress(server: Server, max: number, logger: Logger): SocketCap {
  const open = new Map<string, number>();
  const warned = new Map<string, number>();
  let refused = 0;
  server.on('connection', function capSockets(socket: Socket) {
    const address = socket.remoteAddress ?? '';
    const n = open.get(address) ?? 0;
    if (n >= max) {
      refused++;
      socket.destroy();
      const now = Date.now();
      if ((warned.get(address) ?? 0) <= now) {
        if (warned.size > 10_000) warned.clear();
        warned.set(address, now + WARN_EVERY_MS);
        logger.warn('too many connections from one address; closing the new ones', { address, max, refused });
      }
      return;
    }
    open.set(address, n + 1);
    socket.once('close', () => {
      const left = open.get(address)! - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
  return {
    get refused() {
      return refused;
    },
    openFrom: (address) => open.get(address) ?? 0,
  };
}
