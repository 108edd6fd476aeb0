import { Hono } from 'hono';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { errorResponse, GatewayError } from '../lib/errors';
import { requestBody } from '../lib/request-body';
import { bodyReader, type BodySpec } from './body-reader';

/** An app that reads its body as `read` says, through a reader mounted with `spec`. */
function appWith(spec: BodySpec, read: (c: Parameters<typeof requestBody>[0]) => Promise<unknown>) {
  const app = new Hono();
  app.onError((err, c) =>
    err instanceof GatewayError ? errorResponse(err, 'req_test') : c.text(String(err), 500),
  );
  app.use('*', bodyReader(spec));
  app.post('/', async (c) => c.json({ read: (await read(c)) ?? null }));
  return app;
}

const post = (app: Hono, body: RequestInit['body'], headers: Record<string, string> = {}) =>
  app.request('/', { method: 'POST', body, headers, duplex: 'half' } as RequestInit);

/** A body with no declared length, in two pieces. */
const streamed = (...pieces: string[]) =>
  new ReadableStream<Uint8Array>({
    pull(ctl) {
      const next = pieces.shift();
      if (next === undefined) ctl.close();
      else ctl.enqueue(new TextEncoder().encode(next));
    },
  });

const error = async (res: Response) =>
  ((await res.json()) as { error: { type: string; message: string } }).error;

describe('the body reader', () => {
  const json = appWith({ kind: 'json', maxBytes: 100 }, (c) => requestBody(c).json());

  it('reads JSON within its bounds', async () => {
    const res = await post(json, '{"a":[1,2]}');
    expect(await res.json()).toEqual({ read: { a: [1, 2] } });
  });

  it('refuses a declared length over the bound before reading, and a streamed body as it passes it', async () => {
    const declared = await post(json, 'x'.repeat(101), { 'content-length': '101' });
    expect(declared.status).toBe(413);
    expect((await error(declared)).message).toMatch(/at most 100 bytes/);
    const chunked = await post(json, streamed('{"a":"', 'b'.repeat(200), '"}'));
    expect(chunked.status).toBe(413);
  });

  it('refuses JSON nested past the bound (boundJson) and bad JSON with 400', async () => {
    const deep = appWith({ kind: 'json', maxBytes: 10_000 }, (c) => requestBody(c).json());
    const nested = await post(deep, '['.repeat(300));
    expect(nested.status).toBe(400);
    expect((await error(nested)).message).toMatch(/deeper than 256 levels/);
    const bad = await post(deep, '{"a":');
    expect((await error(bad)).message).toBe('Request body is not valid JSON.');
  });

  it('reads an empty optional body as undefined, a required one as bad JSON', async () => {
    const optional = appWith({ kind: 'json', maxBytes: 100 }, (c) => requestBody(c).json({ optional: true }));
    expect(await (await post(optional, '')).json()).toEqual({ read: null });
    expect((await post(json, '')).status).toBe(400);
  });

  it('inflates gzip counting what comes out, refusing past the inflated bound', async () => {
    const spec: BodySpec = { kind: 'gzip-able', maxBytes: 10_000, maxInflated: 100_000 };
    const gz = appWith(spec, async (c) => (await requestBody(c).bytes()).length);
    const ok = await post(gz, gzipSync(Buffer.alloc(50_000, 'a')), { 'content-encoding': 'gzip' });
    expect(await ok.json()).toEqual({ read: 50_000 });
    const bomb = await post(gz, gzipSync(Buffer.alloc(10_000_000, 'a')), { 'content-encoding': 'gzip' });
    expect(bomb.status).toBe(413);
    expect((await error(bomb)).message).toMatch(/inflates to at most 100000 bytes/);
    const broken = await post(gz, 'not gzip', { 'content-encoding': 'gzip' });
    expect((await error(broken)).message).toMatch(/not valid gzip/);
    expect((await post(gz, 'x', { 'content-encoding': 'br' })).status).toBe(415);
  });

  it('reads a form, and answers 400 to one that cannot be read', async () => {
    const form = appWith({ kind: 'form', maxBytes: 1000 }, (c) => requestBody(c).form({ all: true }));
    const type = { 'content-type': 'application/x-www-form-urlencoded' };
    expect(await (await post(form, 'a=1&a=2&b=3', type)).json()).toEqual({ read: { a: ['1', '2'], b: '3' } });
    const broken = await post(form, '--x\r\nbroken', { 'content-type': 'multipart/form-data' });
    expect(broken.status).toBe(400);
  });

  it('answers 408 to a body that stalls past its idle bound', async () => {
    const idle = appWith({ kind: 'json', maxBytes: 100, idleMs: 50 }, (c) => requestBody(c).json());
    const stalled = new ReadableStream<Uint8Array>({
      start(ctl) {
        ctl.enqueue(new TextEncoder().encode('{"a":'));
      },
    });
    const res = await post(idle, stalled);
    expect(res.status).toBe(408);
    expect((await error(res)).message).toMatch(/stalled/);
  });

  it('keeps the narrower bound when two readers are mounted on a path', async () => {
    const app = new Hono();
    app.onError((err) => errorResponse(err as GatewayError, 'req_test'));
    app.use('/x', bodyReader({ kind: 'json', maxBytes: 10 }));
    app.use('*', bodyReader({ kind: 'json', maxBytes: 1000 }));
    app.post('/x', async (c) => c.json(await requestBody(c).json()));
    const res = await app.request('/x', {
      method: 'POST',
      body: streamed('{"a":"', 'b'.repeat(50), '"}'),
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
  });
});
