import { createEmulatorHandler } from '@keygate/emulator';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDER_KEY, startStack, type Stack } from './harness';
import { waitFor } from './kit/wait';
import { rawExchange } from './raw-http';

/** The emulator behind a server that keeps what reached it. */
async function recordingProvider() {
  const emulator = createEmulatorHandler({ apiKey: PROVIDER_KEY });
  const gate = { open: () => {}, opened: Promise.resolve() };
  const received: { method: string; url: string; headers: Record<string, unknown>; body: Buffer }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      if (req.url?.startsWith('/v1/echo_stream')) {
        // A new streaming endpoint: events, a comment line and a ping, spaced out.
        res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req_upstream' });
        res.write(': keep-alive comment\n\n');
        // The rest only once the client has seen the first event: proof that it was not held back.
        gate.opened.then(() => {
          res.write('event: ping\ndata: {"type": "ping"}\n\n');
          res.end(`event: done\ndata: {"echo":${JSON.stringify(body.toString())}}\n\n`);
        });
        return;
      }
      emulator(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, gate };
}

describe('the open passthrough: any other /v1/… path', () => {
  let stack: Stack;
  let closed: Stack;
  let provider: Awaited<ReturnType<typeof recordingProvider>>;
  beforeAll(async () => {
    provider = await recordingProvider();
    stack = await startStack({ KEYGATE_UPSTREAM_URL: provider.url });
    closed = await startStack({ KEYGATE_UPSTREAM_URL: provider.url, KEYGATE_OPEN_PASSTHROUGH: 'off' });
  });
  afterAll(async () => {
    await stack?.close();
    await closed?.close();
    await new Promise((r) => provider?.server.close(r));
  });

  it('GET /v1/something_new reaches the provider with the account key, query and headers as sent, and is recorded', async () => {
    const res = await fetch(`${stack.gateway.url}/v1/something_new/item_01AbC9?limit=3&x=%20y`, {
      headers: {
        authorization: `Bearer ${stack.appKey}`,
        'anthropic-beta': 'new-thing-2027-01-01',
        'x-custom': 'kept',
      },
    });
    // The emulator does not know it: its 404 comes back unchanged.
    expect(res.status).toBe(404);
    const body = await res.json();
    expect(body).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', message: 'Not found: GET /v1/something_new/item_01AbC9' },
    });
    const got = provider.received.at(-1)!;
    expect(got).toMatchObject({ method: 'GET', url: '/v1/something_new/item_01AbC9?limit=3&x=%20y' });
    expect(got.headers).toMatchObject({
      'x-api-key': PROVIDER_KEY,
      'anthropic-beta': 'new-thing-2027-01-01',
      'x-custom': 'kept',
    });
    expect(got.headers.authorization).toBeUndefined();
    const [call] = (await stack.calls()).filter((c) => c.endpoint.startsWith('GET /v1/something_new'));
    expect(call).toMatchObject({
      endpoint: 'GET /v1/something_new/{id}',
      status: 404,
      error_type: 'not_found_error',
      key_id: stack.keyId,
    });
    expect(call!.latency_ms).toBeGreaterThan(0);
  });

  it('streams both ways: a POST body as sent, an event stream with comments and pings as they come', async () => {
    provider.gate.opened = new Promise<void>((r) => {
      provider.gate.open = r;
    });
    const res = await fetch(`${stack.gateway.url}/v1/echo_stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.appKey}`, 'content-type': 'application/json' },
      body: '{"odd" :  [1,2.50]}',
    });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    // The first event arrives before the stream ends: nothing is buffered.
    expect(first).toBe(': keep-alive comment\n\n');
    provider.gate.open();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read())
      rest += new TextDecoder().decode(r.value);
    expect(rest).toBe(
      'event: ping\ndata: {"type": "ping"}\n\nevent: done\ndata: {"echo":"{\\"odd\\" :  [1,2.50]}"}\n\n',
    );
    expect(provider.received.at(-1)!.body.toString()).toBe('{"odd" :  [1,2.50]}');
    const [call] = (await stack.calls()).filter((c) => c.endpoint === 'POST /v1/echo_stream');
    expect(call).toMatchObject({ status: 200, request_bytes: '19' });
  });

  it('never forwards /v1/organizations/…, nor a path that decodes to another, nor without a key', async () => {
    const before = provider.received.length;
    // Keygate's own account API answers (it takes admin keys only).
    for (const path of [
      '/v1/organizations/not_a_route',
      '/v1/%6Frganizations/x',
      '/v1/x/%2e%2e/organizations/me',
    ]) {
      const own = await fetch(`${stack.gateway.url}${path}`, {
        headers: { authorization: `Bearer ${stack.appKey}` },
      });
      expect(own.status).toBe(401);
    }
    for (const path of ['/v1/files%2F..%2Fx/y', '/v1/other%2F..%2F..%2Fx', '/v1/a/%2e%2e%2forganizations']) {
      const res = await fetch(`${stack.gateway.url}${path}`, {
        headers: { authorization: `Bearer ${stack.appKey}` },
      });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe('not_found_error');
    }
    const anon = await fetch(`${stack.gateway.url}/v1/something_new`);
    expect(anon.status).toBe(401);
    expect(provider.received.length).toBe(before);
  });

  it('never forwards the Admin API or vaults in any spelling, nor a path with empty or dot segments (issue 29)', async () => {
    const before = provider.received.length;
    const port = Number(new URL(stack.gateway.url).port);
    for (const path of [
      '/v1//organizations/me',
      '/v1//organizations/api_keys',
      '/v1///organizations/users',
      '/v1/ORGANIZATIONS/me',
      '/v1/organizations;x/me',
      '/v1/%6frganizations/me',
      '/v1/./organizations/me',
      '/v1/x/../organizations/me',
      '/v1/vaults',
      '/v1/vaults/vlt_011abc',
      '/v1/Vaults',
      '/v1/%76aults/vlt_011abc',
      '/v1//vaults',
      '/v1/vaults;v=1',
      '/v1/something_new//x',
      '/v1/something_new/x/',
      '/v1//agents/agent_011someone',
      '/v1/agents/agent_011someone/anything_new',
      '/v1/Files/file_011someone',
      '/v1/messages/batches/msgbatch_011x/anything_new',
      '/v1/something_new/%252e%252e/x',
    ]) {
      const { response } = await rawExchange(port, [
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${stack.appKey}\r\nConnection: close\r\n\r\n`,
      ]);
      expect([401, 404], path).toContain(response?.status);
      expect(JSON.parse(response!.body.toString()).type, path).toBe('error');
    }
    expect(provider.received.length).toBe(before);
  });

  it('headers named in Connection stay on this hop: not forwarded on /v1/messages, a surface route or the passthrough', async () => {
    const port = Number(new URL(stack.gateway.url).port);
    const send = async (method: string, path: string, body: string) => {
      const before = provider.received.length;
      const { response } = await rawExchange(port, [
        `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${stack.appKey}\r\n` +
          'Content-Type: application/json\r\nConnection: close, X-Secret-Thing\r\nX-Secret-Thing: hush\r\n' +
          'Keep-Alive: timeout=5\r\nX-Kept: yes\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      ]);
      expect(response?.status, path).toBe(200);
      expect(provider.received.length).toBe(before + 1);
      return provider.received.at(-1)!.headers;
    };
    for (const headers of [
      await send(
        'POST',
        '/v1/messages',
        JSON.stringify({
          model: 'claude-haiku-4-5',
          max_tokens: 8,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      ),
      await send('POST', '/v1/agents', JSON.stringify({ name: 'Hop', model: 'claude-haiku-4-5' })),
      await send('POST', '/v1/echo_stream', '{}'),
    ]) {
      expect(headers['x-kept']).toBe('yes');
      expect(headers['x-secret-thing']).toBeUndefined();
      expect(headers['keep-alive']).toBeUndefined();
    }
  });

  it('a client gone before its body arrived, on a surface route or the passthrough: a 499 client_closed call, not a 500', async () => {
    const port = Number(new URL(stack.gateway.url).port);
    for (const path of ['/v1/agents', '/v1/something_gone']) {
      const seen = (await stack.calls()).length;
      const socket = connect(port, '127.0.0.1');
      await new Promise<void>((r) => socket.once('connect', r));
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${stack.appKey}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":',
      );
      // The headers arrive before the close: the gateway sees the request, then its body end early.
      socket.destroy();
      const row = await waitFor(
        async () => {
          await stack.gateway.writer.flush();
          return (await stack.calls()).slice(seen).find((c) => c.endpoint === `POST ${path}`);
        },
        { timeout: 10_000, what: `the call to ${path} to be recorded` },
      );
      expect(row).toMatchObject({ status: 499, error_type: 'client_closed' });
    }
  });

  it('answers an object id with a NUL or a control character like a missing object, before any query', async () => {
    const before = provider.received.length;
    for (const [method, path] of [
      ['DELETE', '/v1/messages/batches/%00'],
      ['GET', '/v1/messages/batches/msgbatch_%01x/results'],
      ['GET', '/v1/files/file_%00'],
      ['DELETE', '/v1/files/%0A'],
    ] as const) {
      const res = await fetch(`${stack.gateway.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${stack.appKey}`, 'anthropic-beta': 'files-api-2025-04-14' },
      });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(((await res.json()) as { error: { type: string } }).error.type).toBe('not_found_error');
    }
    expect(provider.received.length).toBe(before);
  });

  it('keeps 405 for a path the gateway serves under another method', async () => {
    const res = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${stack.appKey}` },
    });
    expect(res.status).toBe(405);
  });

  it('with the passthrough off, an unknown path answers 404 without reaching the provider', async () => {
    const before = provider.received.length;
    const res = await fetch(`${closed.gateway.url}/v1/something_new`, {
      headers: { authorization: `Bearer ${closed.appKey}` },
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect(provider.received.length).toBe(before);
  });
});
