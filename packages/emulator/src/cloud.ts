import aws4 from 'aws4';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { GoogleTokens, type GoogleServiceAccountAuth } from './google-tokens';
import { createEmulatorHandler } from './router';
import type { EmulatorHandler } from './types';

/**
 * The emulator playing one of the clouds that serve the Messages API in the provider's format,
 * with the path and the auth each expects (shapes and sources: the gateway's upstreams/kinds.ts):
 * Claude Platform on AWS (`/v1/messages`, `anthropic-workspace-id`, SigV4 or a workspace key as
 * Bearer), Bedrock's Messages endpoint (`/anthropic/v1/messages`, a Bedrock API key as Bearer,
 * model ids `anthropic.…`), Anthropic-operated Google Cloud (Bearer), Foundry
 * (`/anthropic/v1/messages`, x-api-key). Behind the checks the emulator answers as the provider.
 */
export type CloudKind = 'anthropic' | 'aws' | 'bedrock' | 'google' | 'foundry';

export type CloudAuth =
  | { type: 'x-api-key'; key: string }
  | { type: 'bearer'; token: string }
  | { type: 'sigv4'; accessKeyId: string; secretAccessKey: string; region: string; service: string }
  | GoogleServiceAccountAuth;

/**
 * What the next requests meet: an overloaded 529, connections dropped at once, a stream cut
 * mid-way, a 401 whatever the credential.
 */
export type CloudFault = 'overloaded' | 'refuse' | 'midstream' | 'unauthorized' | null;

export interface CloudOptions {
  kind: CloudKind;
  auth: CloudAuth;
  /** Claude Platform on AWS: the workspace every request must name. */
  workspaceId?: string;
  /** How long a message batch stays in progress (default 2,000 ms, as the provider's emulator). */
  batchMs?: number;
}

/** A request as it reached the cloud, before any check: what the gateway sent. */
export interface CloudReceived {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Why it was refused, or null when it was answered. */
  refused: string | null;
}

export interface CloudEmulator {
  url: string;
  /** Google's token endpoint as this cloud plays it (`{url}/token`): a service account's token_uri. */
  tokenUri: string;
  /** Access tokens minted so far (google-service-account auth). */
  minted: number;
  /** Every token minted so far stops working, as if expired: the next call meets a 401. */
  expireTokens(): void;
  /** The base URL an upstream is configured with (path prefix included). */
  baseUrl: string;
  received: CloudReceived[];
  fault: CloudFault;
  handler: EmulatorHandler;
  close(): Promise<void>;
}

const PREFIX: Record<CloudKind, string> = {
  anthropic: '',
  aws: '',
  bedrock: '/anthropic',
  google: '',
  foundry: '/anthropic',
};

export async function startCloudEmulator(opts: CloudOptions): Promise<CloudEmulator> {
  const handler = createEmulatorHandler({ apiKey: null, ...(opts.batchMs ? { batchMs: opts.batchMs } : {}) });
  const sockets = new Set<Socket>();
  const prefix = PREFIX[opts.kind];
  const cloud = { received: [] as CloudReceived[], fault: null as CloudFault };
  const google = opts.auth.type === 'google-service-account' ? new GoogleTokens(opts.auth) : null;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => serve(req, res, Buffer.concat(chunks)));
  });
  function serve(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
    const headers = { ...(req.headers as Record<string, string>) };
    const path = req.url ?? '/';
    if (google && path === '/token' && req.method === 'POST') return google.answer(res, `${url}/token`, body);
    const entry: CloudReceived = { method: req.method ?? '', path, headers, body, refused: null };
    cloud.received.push(entry);
    const refusal =
      cloud.fault === 'unauthorized'
        ? { status: 401, type: 'authentication_error', message: 'invalid credentials' }
        : check(opts, req, path, prefix, body, google);
    if (refusal) {
      entry.refused = refusal.message;
      res.writeHead(refusal.status, { 'content-type': 'application/json' });
      return void res.end(
        JSON.stringify({ type: 'error', error: { type: refusal.type, message: refusal.message } }),
      );
    }
    if (cloud.fault === 'overloaded') {
      res.writeHead(529, { 'content-type': 'application/json' });
      return void res.end(
        JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
      );
    }
    // Past the cloud's own checks, the provider's emulator answers as the provider would.
    req.url = path.slice(prefix.length);
    req.headers['x-api-key'] = 'cloud-checked';
    if (cloud.fault === 'midstream') req.headers['x-emulator-scenario'] = 'stream_cut';
    handler(req, res, opts.kind === 'bedrock' ? unprefixModel(body) : body);
  }
  server.on('connection', (socket) => {
    if (cloud.fault === 'refuse') return void socket.destroy();
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const emulator = Object.assign(cloud, {
    url,
    tokenUri: `${url}/token`,
    minted: 0,
    expireTokens: () => google?.expireAll(),
    baseUrl: url + prefix,
    handler,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  });
  // Read live from the token endpoint (Object.assign would copy a getter's value once).
  Object.defineProperty(emulator, 'minted', { get: () => google?.minted ?? 0 });
  return emulator;
}

interface Refusal {
  status: number;
  type: string;
  message: string;
}

function check(
  opts: CloudOptions,
  req: IncomingMessage,
  path: string,
  prefix: string,
  body: Buffer,
  google: GoogleTokens | null,
): Refusal | null {
  if (!path.startsWith(`${prefix}/v1/`))
    return { status: 404, type: 'not_found_error', message: `Not found: ${path}` };
  if (opts.workspaceId && req.headers['anthropic-workspace-id'] !== opts.workspaceId)
    return {
      status: 400,
      type: 'invalid_request_error',
      message: 'anthropic-workspace-id: missing or wrong',
    };
  const denied = { status: 401, type: 'authentication_error', message: 'invalid credentials' };
  const a = opts.auth;
  if (a.type === 'x-api-key') return req.headers['x-api-key'] === a.key ? null : denied;
  if (a.type === 'bearer') return req.headers.authorization === `Bearer ${a.token}` ? null : denied;
  if (a.type === 'google-service-account') return google?.accepts(req.headers.authorization) ? null : denied;
  return verifySigV4(req, path, body, a) ? null : { ...denied, message: 'SigV4 signature does not match' };
}

/**
 * Signs the request again with the test credential, over the headers its Authorization names
 * and with its own X-Amz-Date, through the same library, and compares the two signatures.
 */
function verifySigV4(
  req: IncomingMessage,
  path: string,
  body: Buffer,
  a: Extract<CloudAuth, { type: 'sigv4' }>,
): boolean {
  const auth = req.headers.authorization ?? '';
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(
      auth,
    );
  if (!m || m[1] !== a.accessKeyId || m[2] !== a.region || m[3] !== a.service) return false;
  const headers: Record<string, string> = {};
  for (const name of m[4]!.split(';')) {
    const v = req.headers[name];
    if (v === undefined) return false;
    headers[name] = Array.isArray(v) ? v.join(',') : v;
  }
  const again = {
    host: req.headers.host,
    path,
    method: req.method,
    service: a.service,
    region: a.region,
    headers,
    // No body (a GET): aws4 would add a Content-Type and Content-Length to an empty Buffer and sign
    // them too, headers the request never had, and no empty-bodied request would verify.
    body: body.length > 0 ? body : undefined,
  };
  aws4.sign(again, { accessKeyId: a.accessKeyId, secretAccessKey: a.secretAccessKey });
  const resigned = /Signature=([0-9a-f]{64})$/.exec(String(again.headers.Authorization ?? ''));
  return resigned?.[1] === m[5];
}

/** Bedrock knows models as `anthropic.{model}`; the emulator's catalog by the provider's ids. */
function unprefixModel(body: Buffer): Buffer {
  if (body.length === 0) return body;
  const json = JSON.parse(body.toString('utf8')) as { model?: unknown };
  if (typeof json.model === 'string' && json.model.startsWith('anthropic.'))
    json.model = json.model.slice(10);
  return Buffer.from(JSON.stringify(json));
}
