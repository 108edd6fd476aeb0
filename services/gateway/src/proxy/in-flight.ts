import type { ServerResponse } from 'node:http';
import { errorBody, GatewayError } from '../lib/errors';

/** A call the gateway can end before it is done. */
export interface Endable {
  /** Ends the call now, telling the client why in the provider's shape. */
  end(): void;
}

/** The proxy's calls in flight, so a shutdown can end those that outlast its grace. */
export class InFlightCalls {
  readonly #calls = new Set<Endable>();

  get size(): number {
    return this.#calls.size;
  }

  /** Tracks a call until the returned function is called. */
  add(call: Endable): () => void {
    this.#calls.add(call);
    return () => this.#calls.delete(call);
  }

  /** Ends every call in flight; returns how many there were. */
  endAll(): number {
    const calls = [...this.#calls];
    this.#calls.clear();
    for (const call of calls) call.end();
    return calls.length;
  }
}

/**
 * What a call still running when the shutdown grace is over gets. overloaded_error, because
 * that is what clients already retry: the SDKs retry a 529 (and `x-should-retry: true`), and
 * Claude Code retries an `error` event of this type mid-stream, as the provider sends one when
 * it sheds load. api_error would tell them the request itself broke something.
 */
export function shutdownError(): GatewayError {
  return new GatewayError(
    'overloaded_error',
    'The gateway is shutting down and ended this call before it completed; retry it.',
    {
      headers: { 'x-should-retry': 'true', connection: 'close' },
    },
  );
}

/** An `error` event as the provider sends one after HTTP 200. */
export function errorEvent(err: GatewayError, requestId: string): string {
  return `event: error\ndata: ${errorBody(err.type, err.message, requestId)}\n\n`;
}

/** Answers with a gateway error on a response whose headers are not sent yet. */
export function sendError(res: ServerResponse, err: GatewayError, requestId: string): void {
  res.writeHead(err.status, { 'content-type': 'application/json', 'request-id': requestId, ...err.headers });
  res.end(errorBody(err.type, err.message, requestId));
}
