import type { Context, MiddlewareHandler } from 'hono';
import { parseBody } from 'hono/utils/body';
import type { IncomingMessage } from 'node:http';
import { createGunzip } from 'node:zlib';
import { bodyTooLarge } from '../lib/body-limit';
import { GatewayError } from '../lib/errors';
import type { FormFields, RequestBody } from '../lib/request-body';
import { BodyCollector } from './body-collector';
import { boundJson } from './json-bounds';

/**
 * What a route takes as its body, with its bounds. `bytes`: as sent (Stripe's signed payload);
 * `gzip-able`: as sent, then inflated when sent with content-encoding gzip (OTLP exports).
 * JSON read from any kind is bounded in depth and values as `/v1/messages` is (boundJson).
 */
export type BodySpec = { kind: 'none' } | (Bounds & ({ kind: 'json' | 'form' | 'bytes' } | GzipAble));

interface Bounds {
  maxBytes: number;
  /** What the 413 adds after naming the bound (what to do instead). */
  tooLarge?: string;
  /** How long the body may pause between bytes (408); without it, the server's request timeout. */
  idleMs?: number;
}

interface GzipAble {
  kind: 'gzip-able';
  maxInflated: number;
}

/**
 * The one request-body reader, as middleware a route family mounts: a declared length over the
 * bound is refused at once (before authentication), and the body itself is read only when the
 * handler asks (after authentication and any per-address limiter), counted as it arrives. The
 * first reader mounted on a path wins, so a narrower bound mounted first is not widened.
 */
export function bodyReader(spec: BodySpec): MiddlewareHandler {
  return async function bodyReader(c, next) {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    if (spec.kind !== 'none' && Number(c.req.header('content-length')) > spec.maxBytes)
      throw tooLarge(c, spec);
    if (!c.get('body')) c.set('body', declaredBody(c, spec));
    await next();
  };
}

function declaredBody(c: Context, spec: BodySpec): RequestBody {
  let read: Promise<Buffer> | null = null;
  const bytes = () => (read ??= readDeclared(c, spec));
  return {
    bytes,
    async consume() {
      if (spec.kind !== 'none') await bytes();
    },
    async json(opts = {}) {
      const body = await bytes();
      if (opts.optional && body.toString('utf8').trim() === '') return undefined;
      return parseJson(body);
    },
    async form(opts = {}) {
      const body = await bytes();
      try {
        const headers = { 'content-type': c.req.header('content-type') ?? '' };
        return (await parseBody(
          new Request('http://body/', { method: 'POST', headers, body }),
          opts,
        )) as FormFields;
      } catch {
        throw new GatewayError(
          'invalid_request_error',
          'This form could not be read: send it as application/x-www-form-urlencoded, or as multipart/form-data with its boundary.',
        );
      }
    },
  };
}

async function readDeclared(c: Context, spec: BodySpec): Promise<Buffer> {
  if (spec.kind === 'none') throw new Error(`${c.req.method} ${c.req.path} declared no body`);
  const sent = await readStream(c, spec);
  if (spec.kind !== 'gzip-able') return sent;
  const coding = (c.req.header('content-encoding') ?? 'identity').trim().toLowerCase();
  if (coding === 'identity' || coding === '') return sent;
  if (coding !== 'gzip')
    throw new GatewayError(
      'invalid_request_error',
      `Unsupported content encoding '${coding}': send gzip or none.`,
      {
        status: 415,
      },
    );
  return gunzipBounded(sent, spec.maxInflated);
}

/** JSON from a body already read: refused past the depth and value bounds before JSON.parse sees it. */
export async function parseJson(body: Buffer): Promise<unknown> {
  await boundJson(body);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new GatewayError('invalid_request_error', 'Request body is not valid JSON.');
  }
}

/** The body's bytes, counted as they arrive and refused as soon as they pass `maxBytes`. */
async function readStream(c: Context, spec: Bounds): Promise<Buffer> {
  const stream = c.req.raw.body;
  if (!stream) return Buffer.alloc(0);
  const declared = Number(c.req.header('content-length'));
  const reader = stream.getReader();
  const body = new BodyCollector(declared);
  try {
    for (;;) {
      const { done, value } = await nextChunk(reader, spec.idleMs);
      if (done) break;
      if (body.size + value.length > spec.maxBytes) throw tooLarge(c, spec);
      body.add(value);
    }
  } finally {
    // What is left unread is discarded by the error handler (lib/body-limit.ts discardUnread).
    reader.releaseLock();
  }
  return body.body();
}

/** The next chunk, or a 408 when none comes within `idleMs`. */
async function nextChunk(reader: ReadableStreamDefaultReader<Uint8Array>, idleMs: number | undefined) {
  if (!idleMs) return reader.read();
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const seconds = Math.max(1, Math.round(idleMs / 1000));
      const message = `The request body stalled for ${seconds} s; send it without pauses.`;
      reject(new GatewayError('timeout_error', message, { status: 408 }));
    }, idleMs);
  });
  try {
    return await Promise.race([reader.read(), stalled]);
  } finally {
    clearTimeout(timer);
  }
}

/** Gunzips while counting what comes out, stopping at `maxInflated`: a small bomb never inflates whole. */
function gunzipBounded(sent: Buffer, maxInflated: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const gunzip = createGunzip({ chunkSize: 64 * 1024 });
    const chunks: Buffer[] = [];
    let size = 0;
    gunzip.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxInflated) return void chunks.push(chunk);
      gunzip.destroy();
      reject(
        new GatewayError(
          'request_too_large',
          `Request body too large: this route's body inflates to at most ${maxInflated} bytes.`,
        ),
      );
    });
    gunzip.on('end', () => resolve(Buffer.concat(chunks, size)));
    gunzip.on('error', () =>
      reject(new GatewayError('invalid_request_error', 'The body is not valid gzip data.')),
    );
    gunzip.end(sent);
  });
}

/** The 413 naming the route's bound, and what to do instead when the route says. */
function tooLarge(c: Context, spec: Bounds): GatewayError {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const then = spec.tooLarge ? ` ${spec.tooLarge}` : '';
  return bodyTooLarge(
    incoming,
    `Request body too large: this route takes at most ${spec.maxBytes} bytes.${then}`,
  );
}

/**
 * A proxied surface call's body (agents, sessions, environments, the passthrough), read from
 * Node's request with `/v1/messages`' streaming reader and its limits: the surface reaches that
 * reader only through here. ClientGoneError is what it throws when the client leaves mid-body.
 */
export { ClientGoneError, readBody as readProxiedBody } from './proxied-body';
