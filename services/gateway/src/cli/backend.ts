import type { Config } from '../config';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { embeddedClusterDir, legacyPgliteDir, persistentSecret, runningGateway } from '../lib/data-dir';

export type Json = Record<string, any>;

/** Exit codes scripts can rely on. */
export const EXIT = { ok: 0, failure: 1, usage: 2, unchanged: 3, notFound: 4 } as const;

export type Query = Record<string, string | string[] | undefined>;

/** What the CLI asks of Keygate: the operator API, over HTTP or in-process. */
export interface Backend {
  readonly via: string;
  request(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    opts?: { body?: Json; query?: Query },
  ): Promise<Json>;
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
    if (!config.operatorToken)
      throw new CliError(
        "KEYGATE_URL is set: also set KEYGATE_OPERATOR_TOKEN to the gateway's operator token.",
        EXIT.usage,
      );
    const base = config.gatewayUrl;
    return client(`the gateway at ${base}`, overHttp(base), config.operatorToken, async () => {});
  }
  if (!config.databaseUrl) {
    const running = runningGateway(config.dataDir);
    if (running) {
      const token = config.operatorToken ?? persistentSecret(config.dataDir, 'operator-token');
      return client(`the gateway at ${running.url}`, overHttp(running.url), token, async () => {});
    }
    warnIfNewDatabase(config.dataDir);
  }
  // Server code (the store, the operator API) is loaded only when the CLI serves the API itself.
  const { inProcessApi } = await import('./in-process');
  const api = await inProcessApi(config);
  return client(api.via, api.send, api.token, api.close);
}

/**
 * The CLI is about to initialise an embedded database no gateway has used: said on stderr (a
 * script reading --json still sees it), since a gateway serving another data dir would not
 * know what this command writes.
 */
function warnIfNewDatabase(dataDir: string): void {
  if (existsSync(join(embeddedClusterDir(dataDir), 'PG_VERSION')) || legacyPgliteDir(dataDir)) return;
  process.stderr.write(
    `keygate: no database in ${dataDir} yet; creating a new embedded one there. A gateway started with another KEYGATE_DATA_DIR (or DATABASE_URL) will not see it: run the CLI with the gateway's KEYGATE_DATA_DIR, or KEYGATE_URL.\n`,
  );
}

function queryString(query: Query | undefined): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value])
      params.append(Array.isArray(value) ? `${name}[]` : name, v);
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

/** One request to the operator API: its status and body. */
export type Send = (
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string | undefined,
) => Promise<{ status: number; text: string }>;

/**
 * A gateway's operator API over node:http (node:https for an https KEYGATE_URL). `fetch` would
 * first load Node's bundled undici: 0.15 s of CPU, a third of a whole CLI command (measured).
 */
function overHttp(base: string): Send {
  return async (method, path, headers, body) => {
    const url = new URL(`${base}/operator/v1${path}`);
    const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
    return new Promise((resolve, reject) => {
      // A length, not chunks: a DELETE with a body sent chunked is refused as malformed.
      const length = body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) };
      const req = request(url, { method, headers: { ...headers, ...length } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  };
}

function parse(text: string): Json | null {
  try {
    return JSON.parse(text) as Json;
  } catch {
    return null;
  }
}

function client(via: string, send: Send, token: string, close: () => Promise<void>): Backend {
  return {
    via,
    async request(method, path, opts = {}) {
      let res: { status: number; text: string };
      try {
        const headers = {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'keygate-actor': 'cli',
        };
        res = await send(
          method,
          path + queryString(opts.query),
          headers,
          opts.body ? JSON.stringify(opts.body) : undefined,
        );
      } catch (err) {
        throw new CliError(`Cannot reach ${via}: ${(err as Error).message}. Is the gateway running?`);
      }
      const json = parse(res.text);
      if (res.status < 200 || res.status > 299) {
        const message = json?.error?.message ?? `HTTP ${res.status}`;
        const code = res.status === 404 ? EXIT.notFound : res.status === 400 ? EXIT.usage : EXIT.failure;
        throw new CliError(res.status === 401 ? `${message} (check KEYGATE_OPERATOR_TOKEN)` : message, code);
      }
      return json ?? {};
    },
    close,
  };
}
