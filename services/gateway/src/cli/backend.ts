import type { Hono } from 'hono';
import type { AppEnv } from '../app-env';
import type { Config } from '../config';
import { persistentSecret, runningGateway } from '../lib/data-dir';
import { operatorRoutes } from '../operator/routes';
import { openRuntime } from '../runtime';

export type Json = Record<string, any>;

/** What the CLI asks of Keygate: the operator API, over HTTP or in-process. */
export interface Backend {
  readonly via: string;
  request(method: 'GET' | 'POST' | 'DELETE', path: string, body?: Json): Promise<Json>;
  close(): Promise<void>;
}

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/**
 * The embedded database admits one process: when a gateway is running on it, the CLI goes
 * through that gateway's operator API; otherwise it serves the same API in-process on the
 * store it opens itself, so both paths answer alike.
 */
export async function openBackend(config: Config): Promise<Backend> {
  if (!config.databaseUrl) {
    const running = runningGateway(config.dataDir);
    if (running) {
      const token = config.operatorToken ?? persistentSecret(config.dataDir, 'operator-token');
      return client(`the gateway at ${running.url}`, (path, init) => fetch(`${running.url}/operator/v1${path}`, init), token, async () => {});
    }
  }
  const rt = await openRuntime(config);
  const token = rt.operatorToken ?? 'cli-in-process-operator-token';
  const app: Hono<AppEnv> = operatorRoutes({ store: rt.store, box: rt.box, clock: Date.now, operatorToken: token });
  const via = config.databaseUrl ? 'PostgreSQL' : `the embedded database in ${config.dataDir}`;
  return client(via, async (path, init) => app.request(path, init), token, () => rt.close());
}

function client(via: string, send: (path: string, init: RequestInit) => Promise<Response>, token: string, close: () => Promise<void>): Backend {
  return {
    via,
    async request(method, path, body) {
      const res = await send(path, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const json = (await res.json()) as Json;
      if (!res.ok) throw new CliError(json?.error?.message ?? `HTTP ${res.status}`, res.status === 404 ? 4 : 1);
      return json;
    },
    close,
  };
}
