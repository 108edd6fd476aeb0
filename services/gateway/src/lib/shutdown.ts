import type { Server } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from './logger';

export interface DrainOptions {
  /** How long calls and streams in flight may run on. */
  graceMs: number;
  /** Ends what is still in flight once the grace is over; returns how many calls it ended. */
  endInFlight(): number;
  logger: Logger;
  /** Aborted (a second SIGINT or SIGTERM): the grace ends at once, the rest of the drain is unchanged. */
  hurry?: AbortSignal;
}

// Time for the answers written by endInFlight (an error event, a 529) to reach their clients.
const FAREWELL_MS = 1_000;
const IDLE_SWEEP_MS = 100;

/**
 * Stops a server as a rolling restart needs: no new connections, idle keep-alive connections
 * closed as soon as they are idle, calls in flight allowed to finish within the grace; then
 * what is left is ended by `endInFlight` and the remaining connections are cut.
 */
export async function drainServer(server: Server, opts: DrainOptions): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // Connections whose call finishes during the grace become idle; close them as they do.
  const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  try {
    const grace = delay(opts.graceMs, false, { ref: false });
    const hurried = opts.hurry
      ? new Promise<false>((resolve) => {
          if (opts.hurry!.aborted) resolve(false);
          opts.hurry!.addEventListener('abort', () => resolve(false), { once: true });
        })
      : grace;
    if (await Promise.race([closed.then(() => true), grace, hurried])) return;
    const ended = opts.endInFlight();
    opts.logger.warn(
      opts.hurry?.aborted
        ? 'shutdown hurried: calls in flight ended'
        : 'shutdown grace over: calls in flight ended',
      { ended, graceMs: opts.graceMs },
    );
    await Promise.race([closed, delay(FAREWELL_MS, undefined, { ref: false })]);
    server.closeAllConnections();
    await closed;
  } finally {
    clearInterval(sweep);
  }
}
