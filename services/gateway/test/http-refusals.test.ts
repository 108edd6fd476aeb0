import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callModel, startStack, type Stack } from './harness';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: any;
  /** Bytes after the first response's body (a second answer would show here). */
  rest: string;
  /** Whether the gateway closed the connection. */
  closed: boolean;
}

function open(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(stack.gateway.port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Writes `bytes` and reads one response; with `untilClose`, waits for the gateway to close the connection. */
function exchange(socket: Socket, bytes: string, untilClose: boolean): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let data = Buffer.alloc(0);
    let closed = false;
    const parse = (): RawResponse | null => {
      const end = data.indexOf('\r\n\r\n');
      if (end === -1) return null;
      const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      const length = Number(headers['content-length']);
      if (data.length < end + 4 + length) return null;
      const body = data.subarray(end + 4, end + 4 + length).toString('utf8');
      return {
        status: Number(statusLine!.split(' ')[1]),
        headers,
        body: JSON.parse(body),
        rest: data.subarray(end + 4 + length).toString('latin1'),
        closed,
      };
    };
    const timer = setTimeout(
      () =>
        reject(
          new Error(
            `no ${untilClose ? 'close' : 'response'} within 5 s; got ${JSON.stringify(data.toString('latin1').slice(0, 300))}`,
          ),
        ),
      5_000,
    );
    const onData = (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const res = !untilClose && parse();
      if (res) finish(res);
    };
    const onClose = () => {
      closed = true;
      const res = parse();
      if (res) finish(res);
      else
        reject(
          new Error(
            `closed without a complete response: ${JSON.stringify(data.toString('latin1').slice(0, 300))}`,
          ),
        );
    };
    const finish = (res: RawResponse) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve(res);
    };
    socket.on('data', onData);
    socket.on('close', onClose);
    socket.on('error', () => {});
    socket.write(bytes);
  });
}

function expectProviderShape(res: RawResponse, status: number, type: string) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toBe('application/json');
  expect(res.headers['request-id']).toMatch(/^req_[0-9A-Za-z]{24}$/);
  expect(res.body).toEqual({
    type: 'error',
    error: { type, message: expect.any(String) },
    request_id: res.headers['request-id'],
  });
}

async function expectNormalCallWorks() {
  const res = await callModel(stack.gateway.url, stack.appKey);
  expect(res.status).toBe(200);
  expect(res.body.type).toBe('message');
}

const HOST = 'host: 127.0.0.1\r\n';

describe('refusals of the HTTP parser, before the app runs', () => {
  // Node's default answer to each of these is a bare status line with no body and no request id.
  it.each([
    [
      'a header block over the limit',
      `GET /v1/models HTTP/1.1\r\n${HOST}x-filler: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'request_too_large',
    ],
    [
      'a header block far over the limit, still being sent',
      `POST /v1/messages HTTP/1.1\r\n${HOST}${'x-filler: '.concat('b'.repeat(1_000), '\r\n').repeat(200)}\r\n`,
      431,
      'request_too_large',
    ],
    [
      'an unknown method in the request line',
      `BREW /v1/messages HTTP/1.1\r\n${HOST}\r\n`,
      400,
      'invalid_request_error',
    ],
    ['a malformed protocol version', `GET /v1/models HTTX/1.1\r\n${HOST}\r\n`, 400, 'invalid_request_error'],
    [
      'a header name with a space',
      `GET /v1/models HTTP/1.1\r\n${HOST}bad header: 1\r\n\r\n`,
      400,
      'invalid_request_error',
    ],
    [
      'a header value with a control character',
      `GET /v1/models HTTP/1.1\r\n${HOST}x-bad: a\x01b\r\n\r\n`,
      400,
      'invalid_request_error',
    ],
    [
      'a content-length that is not a number',
      `POST /v1/messages HTTP/1.1\r\n${HOST}content-length: ten\r\n\r\n`,
      400,
      'invalid_request_error',
    ],
  ])(
    '%s: the provider’s error shape with a request id, then the connection closes',
    async (_name, bytes, status, type) => {
      const socket = await open();
      const res = await exchange(socket, bytes, true);
      expectProviderShape(res, status, type);
      expect(res.headers.connection).toBe('close');
      expect(res.rest).toBe('');
      expect(res.closed).toBe(true);
      await expectNormalCallWorks();
    },
  );

  it('a malformed request after a good one on the same connection is answered alike', async () => {
    const socket = await open();
    const first = await exchange(socket, `GET /health HTTP/1.1\r\n${HOST}\r\n`, false);
    expect(first).toMatchObject({ status: 200, body: { status: 'ok' }, closed: false });
    const second = await exchange(socket, `GET /v1/models HTTP/1.1\r\n${HOST}bad header: 1\r\n\r\n`, true);
    expectProviderShape(second, 400, 'invalid_request_error');
    expect(second.closed).toBe(true);
    await expectNormalCallWorks();
  });
});

describe('refusals by the app: methods and paths it does not serve', () => {
  const auth = () => `authorization: Bearer ${stack.appKey}\r\n`;

  it.each([
    ['GET /v1/messages', 'GET', '/v1/messages', 'POST'],
    ['PUT /v1/messages', 'PUT', '/v1/messages', 'POST'],
    ['GET /v1/messages/count_tokens', 'GET', '/v1/messages/count_tokens', 'POST'],
    ['POST /v1/models', 'POST', '/v1/models', 'GET'],
    ['DELETE /v1/models/claude-opus-4-5', 'DELETE', '/v1/models/claude-opus-4-5', 'GET'],
  ])(
    '%s: 405 invalid_request_error with allow, as the provider answers; the connection stays open',
    async (_name, method, path, allow) => {
      const socket = await open();
      const res = await exchange(
        socket,
        `${method} ${path} HTTP/1.1\r\n${HOST}${auth()}content-length: 0\r\n\r\n`,
        false,
      );
      expectProviderShape(res, 405, 'invalid_request_error');
      expect(res.headers.allow).toBe(allow);
      expect(res.body.error.message).toContain(`${method} ${path}`);
      // The same connection carries the next request.
      const next = await exchange(socket, `GET /health HTTP/1.1\r\n${HOST}\r\n`, false);
      expect(next).toMatchObject({ status: 200, closed: false });
      socket.destroy();
      await expectNormalCallWorks();
    },
  );

  it('a method an account API path does not take: 405 with the methods it does', async () => {
    const admin = await stack.newKey({ kind: 'admin' });
    const socket = await open();
    const res = await exchange(
      socket,
      `PUT /v1/organizations/api_keys HTTP/1.1\r\n${HOST}x-api-key: ${admin.secret}\r\ncontent-length: 0\r\n\r\n`,
      false,
    );
    expectProviderShape(res, 405, 'invalid_request_error');
    expect(res.headers.allow!.split(', ').sort()).toEqual(['GET', 'POST']);
    socket.destroy();
    await expectNormalCallWorks();
  });

  it.each(['/v1/nothing-here', '/v1/messages/batches/x/y', '/v1/messages/'])(
    'an unknown path under /v1/ (%s): 404 not_found_error',
    async (path) => {
      const socket = await open();
      const res = await exchange(
        socket,
        `POST ${path} HTTP/1.1\r\n${HOST}${auth()}content-length: 0\r\n\r\n`,
        false,
      );
      expectProviderShape(res, 404, 'not_found_error');
      expect(res.headers.allow).toBeUndefined();
      socket.destroy();
      await expectNormalCallWorks();
    },
  );
});
