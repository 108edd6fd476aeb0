import type { Config } from '../config';
import { persistentSecret, runningGateway } from '../lib/data-dir';

export type Json = Record<string, any>;

/** Exit codes scripts can rely on. */
export const EXIT = { ok: 0, failure: 1, usage: 2, unchanged: 3, notFound: 4 } as const;

export type Query = Record<string, string | string[] | undefined>;

/** What the CLI asks of Keygate: the operator API, over HTTP or in-process. */
export interface Backend {
  readonly via: string;
  request(method: 'GET' | 'POST' | 'DELETE', path: string, opts?: { body?: Json; query?: Query }): Promise<Json>;
  close(): Promise<void>;
}

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failure,
  ) {
    super(message);
  }
}

/**
 * Where the CLI sends its requests, all to the operator API so every path answers alike:
 * KEYGATE_URL (a running gateway, anywhere); else, on the embedded database, the gateway
 * that owns it (the embedded database admits one process); else the same API served
 * in-process on the store the CLI opens itself.
 */
export async function openBackend(config: Config): Promise<Backend> {
  if (config.gatewayUrl) {
    if (!config.operatorToken) throw new CliError('KEYGATE_URL is set: also set KEYGATE_OPERATOR_TOKEN to the gateway\'s operator token.', EXIT.usage);
    const base = config.gatewayUrl;
    return client(`the gateway at ${base}`, (path, init) => fetch(`${base}/operator/v1${path}`, init), config.operatorToken, async () => {});
  }
  if (!config.databaseUrl) {
    const running = runningGateway(config.dataDir);
    if (running) {
      const token = config.operatorToken ?? persistentSecret(config.dataDir, 'operator-token');
      return client(`the gateway at ${running.url}`, (path, init) => fetch(`${running.url}/operator/v1${path}`, init), token, async () => {});
    }
  }
  // Server code (the store, the operator API) is loaded only when the CLI serves the API itself.
  const { inProcessApi } = await import('./in-process');
  const api = await inProcessApi(config);
  return client(api.via, api.send, api.token, api.close);
}

function queryString(query: Query | undefined): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) params.append(Array.isArray(value) ? `${name}[]` : name, v);
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

function client(via: string, send: (path: string, init: RequestInit) => Promise<Response>, token: string, close: () => Promise<void>): Backend {
  return {
    via,
    async request(method, path, opts = {}) {
      let res: Response;
      try {
        res = await send(path + queryString(opts.query), {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'keygate-actor': 'cli' },
          ...(opts.body ? { body: JSON.stringify(opts.body) } : {}),
        });
      } catch (err) {
        throw new CliError(`Cannot reach ${via}: ${(err as Error).message}. Is the gateway running?`);
      }
      const json = (await res.json().catch(() => null)) as Json | null;
      if (!res.ok) {
        const message = json?.error?.message ?? `HTTP ${res.status}`;
        const code = res.status === 404 ? EXIT.notFound : res.status === 400 ? EXIT.usage : EXIT.failure;
        throw new CliError(res.status === 401 ? `${message} (check KEYGATE_OPERATOR_TOKEN)` : message, code);
      }
      return json ?? {};
    },
    close,
  };
}
