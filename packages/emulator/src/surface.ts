import { BatchStore, handleBatches, type BatchOptions } from './batches';
import { EmulatorError } from './errors';
import { FileStore, handleFiles } from './files';
import { readBody, sendError, type Exchange } from './http';
import type { Ledger } from './ledger';
import { readScenario } from './scenarios';

/** The provider's endpoints beyond messages: files and message batches, with their state. */
export class Surface {
  readonly files = new FileStore();
  readonly batches: BatchStore;

  constructor(ledger: Ledger, opts: BatchOptions = {}) {
    this.batches = new BatchStore(ledger, opts);
  }

  static handles(path: string): boolean {
    return path.startsWith('/v1/files') || path.startsWith('/v1/messages/batches');
  }

  /** Answers one request (auth already checked); the provider's error shape for every failure. */
  route(
    ex: Exchange,
    path: string,
    query: string,
    preread: Buffer | undefined,
    defaultScenario?: string,
  ): void {
    const params = new URLSearchParams(query);
    try {
      if (path.startsWith('/v1/files')) {
        if (!handleFiles(ex, this.files, path, params)) notFound(ex, path);
        return;
      }
      const scenario = readScenario(ex.req.headers, defaultScenario);
      const run = (body: Buffer | null) => {
        try {
          if (!handleBatches(ex, this.batches, path, params, body, scenario)) notFound(ex, path);
        } catch (err) {
          fail(ex, err);
        }
      };
      if (ex.req.method !== 'POST') run(null);
      else if (preread !== undefined) run(preread);
      else readBody(ex, run);
    } catch (err) {
      fail(ex, err);
    }
  }
}

function notFound(ex: Exchange, path: string): void {
  sendError(ex, new EmulatorError('not_found_error', `Not found: ${ex.req.method ?? ''} ${path}`));
}

function fail(ex: Exchange, err: unknown): void {
  if (err instanceof EmulatorError) return sendError(ex, err);
  if (ex.res.headersSent) return void ex.res.destroy();
  sendError(ex, new EmulatorError('api_error', `Emulator bug: ${(err as Error).message}`));
}
