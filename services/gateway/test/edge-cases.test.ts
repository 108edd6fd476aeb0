import { connect } from 'node:net';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from './harness';
import { waitFor } from './kit/wait';

const body = JSON.stringify({
  model: 'claude-opus-4-5',
  max_tokens: 8,
  messages: [{ role: 'user', content: 'edge' }],
});

async function rowsUntil(stack: Stack, n: number) {
  return waitFor(
    async () => {
      const rows = await stack.calls();
      return rows.length >= n && rows;
    },
    { timeout: 5_000, what: `${n} call rows` },
  );
}

/** Sends a raw request: headers, then part of the body, then what `then` decides. */
function rawRequest(
  port: number,
  head: string,
  then: (socket: ReturnType<typeof connect>) => void,
): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(head);
      then(socket);
    });
    let answer = '';
    socket.on('data', (d) => (answer += d));
    socket.on('close', () => resolve(answer));
    socket.on('error', () => resolve(answer));
  });
}

describe('requests that end early or stall', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ KEYGATE_BODY_IDLE_MS: '300' });
  });
  afterAll(() => stack?.close());

  it('a client gone before its body arrived is recorded as client_closed, and nothing hangs', async () => {
    const head = `POST /v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${stack.appKey}\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"mod`;
    await rawRequest(stack.gateway.port, head, (s) => setTimeout(() => s.destroy(), 50));
    const [row] = await rowsUntil(stack, 1);
    expect(row).toMatchObject({
      status: 499,
      error_type: 'client_closed',
      key_id: stack.keyId,
      partial: true,
    });
    expect(stack.emulator.ledger.entries).toHaveLength(0);
  });

  it('a body that stalls is refused with 408 timeout_error instead of holding the connection', async () => {
    const head = `POST /v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${stack.appKey}\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"model"`;
    const answer = await rawRequest(stack.gateway.port, head, (s) => setTimeout(() => s.destroy(), 5_000));
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(answer).toContain('"type":"timeout_error"');
    expect(answer).toContain('stalled');
  });

  it('an absurd retry count is clamped, and calls after it are still recorded', async () => {
    const before = (await stack.calls()).length;
    for (const retry of ['99999999999', '2']) {
      const res = await fetch(`${stack.gateway.url}/v1/messages`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${stack.appKey}`,
          'content-type': 'application/json',
          'x-stainless-retry-count': retry,
        },
        body,
      });
      expect(res.status).toBe(200);
    }
    const rows = (await rowsUntil(stack, before + 2)).slice(before);
    expect(rows.map((r) => r.retry_count)).toEqual([1000, 2]);
  });

  it('an overlong model name is refused with a clear 400', async () => {
    const res = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.appKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...JSON.parse(body), model: 'm'.repeat(8000) }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/^model:/);
  });
});

describe('the path sent upstream is the route that matched', () => {
  let upstream: Server;
  const seen: string[] = [];
  let stack: Stack;

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      seen.push(req.url!);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_capture' });
        res.end('{"data":[],"has_more":false}');
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    stack = await startStack({
      KEYGATE_UPSTREAM_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
    });
  });
  afterAll(async () => {
    await stack?.close();
    upstream?.close();
  });

  it('dot segments, encoded slashes and absolute-form targets never reach the provider as written', async () => {
    const get = (path: string) =>
      rawRequest(
        stack.gateway.port,
        `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${stack.appKey}\r\nConnection: close\r\n\r\n`,
        () => {},
      );
    await get('/v1/models?limit=5');
    await get('/v1/models/..%2Fmessages%2Fbatches');
    await get('http://evil.example/v1/models');
    expect(seen).toEqual(['/v1/models?limit=5', '/v1/models/..%2Fmessages%2Fbatches', '/v1/models']);
    const answer = await get('/v1/messages/batches/%2e%2e/%2e%2e/models');
    if (seen.length === 4) expect(seen[3]).toBe('/v1/models');
    // Normalised to /v1/models, whose list the gateway already holds (surface/models-routes.ts), or refused.
    else expect(answer).toMatch(/^HTTP\/1\.1 (404|200)/);
  });
});
