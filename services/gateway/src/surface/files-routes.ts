import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono, type Context } from 'hono';
import { Transform } from 'node:stream';
import type { AppEnv } from '../app-env';
import { keyAuth } from '../auth/middleware';
import { discardUnread } from '../lib/body-limit';
import { GatewayError } from '../lib/errors';
import { forward, type ForwardCall } from '../proxy/forward';
import { sendError } from '../proxy/in-flight';
import type { ProxyOptions } from '../proxy/routes';
import { refusedRecord } from '../lib/call-record';
import { admitOrThrow, viaUpstreams, recordGone, surfaceCall } from './call';
import { exchange, jsonOf, relay } from './exchange';
import { assertVisible, ownerOf, type Objects } from './ownership';
import { atHome, madeOn } from './object-home';
import { ownedList, providerReader } from './owned-list';
import type { ObjectKind } from './object-queries';

export interface SurfaceDeps {
  proxy: ProxyOptions;
  objects: Objects;
  /** Largest file upload; the multipart envelope may add a little (MULTIPART_SLACK). */
  maxFileBytes: number;
}

// Part headers, boundaries and other fields of a multipart upload around the file's bytes.
const MULTIPART_SLACK = 64 * 1024;

/**
 * The provider's Files API through Keygate (beta `files-api-2025-04-14`; endpoints as the
 * official TypeScript SDK 1.11 calls them, read 2026-11-25): uploads stream to the provider
 * as they arrive, downloads stream back, and each file is owned by whoever uploaded it.
 */
export function filesRoutes(deps: SurfaceDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const auth = keyAuth(deps.proxy.resolver, ['live', 'test']);
  app.post('/v1/files', auth, (c) => run(c, deps, 'POST /v1/files', '/v1/files', upload));
  app.get('/v1/files', auth, (c) => run(c, deps, 'GET /v1/files', '/v1/files', listOf('file', '/v1/files')));
  app.get('/v1/files/:id', auth, (c) => run(c, deps, 'GET /v1/files/{id}', fileUrl(c), ownedJson));
  app.delete('/v1/files/:id', auth, (c) => run(c, deps, 'DELETE /v1/files/{id}', fileUrl(c), ownedJson));
  app.get('/v1/files/:id/content', auth, (c) =>
    run(c, deps, 'GET /v1/files/{id}/content', `${fileUrl(c)}/content`, download),
  );
  return app;
}

const fileUrl = (c: Context<AppEnv>) => `/v1/files/${encodeURIComponent(c.req.param('id')!)}`;

type Step<D> = (call: ForwardCall, deps: D, c: Context<AppEnv>) => Promise<void>;

/** One surface call: admission, the step, and a refusal recorded like any other call. */
export async function run<D extends Pick<SurfaceDeps, 'proxy'>>(
  c: Context<AppEnv>,
  deps: D,
  endpoint: string,
  path: string,
  step: Step<D>,
): Promise<Response> {
  const call = surfaceCall(c, deps.proxy, endpoint, path);
  try {
    await admitOrThrow(deps.proxy, call.principal, call.endpoint);
    await viaUpstreams(call, deps.proxy);
    await step(call, deps, c);
  } catch (err) {
    if (recordGone(call, deps.proxy, err)) return RESPONSE_ALREADY_SENT;
    if (!(err instanceof GatewayError)) throw err;
    if (!forwarded.has(err)) deps.proxy.record(refusedRecord(call, err));
    if (call.res.headersSent) return RESPONSE_ALREADY_SENT;
    // Refused before its body was read (an upload over the limit): the rest is discarded and the
    // connection closes after the answer, or the client still sending gets a reset in its place.
    if (!discardUnread(call.req)) throw err;
    call.res.setHeader('connection', 'close');
    sendError(call.res, err, call.requestId);
  }
  return RESPONSE_ALREADY_SENT;
}

async function upload(call: ForwardCall, deps: SurfaceDeps): Promise<void> {
  const limit = deps.maxFileBytes + MULTIPART_SLACK;
  const tooLarge = () =>
    new GatewayError(
      'request_too_large',
      `File too large: uploads through this gateway are limited to ${deps.maxFileBytes} bytes.`,
    );
  const declared = call.upload?.length ?? null;
  if (declared !== null && declared > limit) throw tooLarge();
  let seen = 0;
  let over = false;
  // Counted as it streams: a body without a length (chunked) is cut at the limit.
  const counted = new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (seen > limit) {
        over = true;
        return done(tooLarge());
      }
      done(null, chunk);
    },
  });
  call.req.pipe(counted);
  call.req.once('error', (err) => counted.destroy(err));
  let answer: Awaited<ReturnType<typeof exchange>>;
  try {
    answer = await exchange(call, deps.proxy, counted, declared);
  } catch (err) {
    if (over) throw tooLarge();
    throw err;
  }
  const file = jsonOf(answer);
  if (typeof file?.id === 'string')
    await deps.objects.claim(
      call.principal.key.accountId,
      ownerOf(call.principal, 'file', file.id, call.groupId, madeOn(answer)),
    );
  relay(call, deps.proxy, answer, answer.body, { requestBytes: seen });
}

/**
 * A list of one kind of object. Anyone but an admin gets full pages of their own (owned-list.ts).
 * An admin gets the provider's page (the account's objects, those made outside Keygate among
 * them), unless the account has upstreams: its objects may then live on several, whose pages
 * cannot be merged under one cursor, so the list is Keygate's own record of the account's
 * objects, each read where it lives (objects made outside Keygate are not in it).
 */
export function listOf(
  kind: ObjectKind,
  base: string,
  shown?: (o: Record<string, unknown>) => Record<string, unknown>,
) {
  return async (call: ForwardCall, deps: SurfaceDeps): Promise<void> => {
    const admin = call.principal.memberRole === 'admin';
    if (!admin || call.target.via)
      return ownedList(call, deps, kind, providerReader(call, deps, base), shown, admin);
    const answer = await exchange(call, deps.proxy, null, null);
    const page = shown ? jsonOf(answer) : null;
    if (!shown || !page || !Array.isArray(page.data)) return relay(call, deps.proxy, answer);
    relay(call, deps.proxy, answer, Buffer.from(JSON.stringify({ ...page, data: page.data.map(shown) })));
  };
}

async function ownedJson(call: ForwardCall, deps: SurfaceDeps, c: Context<AppEnv>): Promise<void> {
  const id = c.req.param('id')!;
  await assertVisible(deps.objects, call.principal, 'file', id);
  await atHome(call, deps.proxy, deps.objects, 'file', id);
  const answer = await exchange(call, deps.proxy, null, null);
  if (call.req.method === 'DELETE' && answer.status === 200)
    await deps.objects.forget(call.principal.key.accountId, id);
  relay(call, deps.proxy, answer);
}

async function download(call: ForwardCall, deps: SurfaceDeps, c: Context<AppEnv>): Promise<void> {
  const id = c.req.param('id')!;
  await assertVisible(deps.objects, call.principal, 'file', id);
  await atHome(call, deps.proxy, deps.objects, 'file', id);
  await streamed(call, deps);
}

// Errors of calls the forwarder already recorded.
const forwarded = new WeakSet<object>();

/** Streams the provider's answer through as it arrives (downloads, batch results). */
export function streamed(call: ForwardCall, deps: Pick<SurfaceDeps, 'proxy'>): Promise<void> {
  return forward(call, deps.proxy).catch((err: Error) => {
    forwarded.add(err);
    throw err;
  });
}
