import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from './harness';
import { errorShape, head, rawExchange, type Part } from './raw-http';
import { waitFor } from './kit/wait';

const HEADERS_TIMEOUT_MS = 1_000;
const REQUEST_TIMEOUT_MS = 2_500;
const MAX_SOCKETS = 12;
// Node checks its timeouts every quarter of the headers timeout here (at most every second).
const CHECK_MS = HEADERS_TIMEOUT_MS / 4;

let stack: Stack;
let port: number;
beforeAll(async () => {
  stack = await startStack({
    KEYGATE_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
    KEYGATE_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    KEYGATE_BODY_IDLE_MS: '10000',
    KEYGATE_MAX_SOCKETS_PER_ADDRESS: String(MAX_SOCKETS),
  });
  port = stack.gateway.port;
});
afterAll(() => stack?.close());

/** Sends `text` one byte at a time, `everyMs` apart. */
const drip = (text: string, everyMs: number): Part[] => [...text].flatMap((ch) => [ch, { pauseMs: everyMs }]);

const BODY = JSON.stringify({
  model: 'claude-opus-4-5',
  max_tokens: 16,
  messages: [{ role: 'user', content: 'hello' }],
});

describe('slowloris: sockets that dribble are answered 408 and closed within a bound', () => {
  it('headers sent one byte every 250 ms: 408 timeout_error in the provider shape, then closed', async () => {
    const text = head('POST', '/v1/messages', [
      ['host', 'x'],
      ['authorization', `Bearer ${stack.appKey}`],
      ['content-type', 'application/json'],
      ['content-length', String(BODY.length)],
    ]);
    const r = await rawExchange(port, drip(text, 250), { untilClose: true, timeoutMs: 15_000 });
    expect(r.closed).toBe(true);
    expect(r.elapsedMs).toBeLessThan(HEADERS_TIMEOUT_MS + 2 * CHECK_MS + 1_000);
    expect(r.response!.status).toBe(408);
    expect(errorShape(r.response!).error.type).toBe('timeout_error');
  });

  it('a connection that sends nothing is closed after the headers timeout', async () => {
    const r = await rawExchange(port, [], { untilClose: true, timeoutMs: 15_000 });
    expect(r.closed).toBe(true);
    expect(r.elapsedMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
    expect(r.elapsedMs).toBeLessThan(HEADERS_TIMEOUT_MS + 2 * CHECK_MS + 1_000);
  });

  it('a body sent one byte every 200 ms (never idle) is cut at the request timeout with 408', async () => {
    const text = head('POST', '/v1/messages', [
      ['host', 'x'],
      ['authorization', `Bearer ${stack.appKey}`],
      ['content-type', 'application/json'],
      ['content-length', String(BODY.length)],
    ]);
    const r = await rawExchange(port, [text, ...drip(BODY, 200)], { untilClose: true, timeoutMs: 15_000 });
    expect(r.closed).toBe(true);
    expect(r.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 2 * CHECK_MS + 1_000);
    expect(r.response!.status).toBe(408);
    expect(errorShape(r.response!).error.type).toBe('timeout_error');
  });

  it('a body dribbling after the answer (a wrong key, answered 401 at once) does not keep the socket', async () => {
    const text = head('POST', '/v1/messages', [
      ['host', 'x'],
      ['authorization', 'Bearer kg_live_nope'],
      ['content-type', 'application/json'],
      ['content-length', String(BODY.length)],
    ]);
    const r = await rawExchange(port, [text, ...drip(BODY, 200)], { untilClose: true, timeoutMs: 15_000 });
    expect(r.response!.status).toBe(401);
    expect(errorShape(r.response!).error.type).toBe('authentication_error');
    expect(r.closed).toBe(true);
    expect(r.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 2 * CHECK_MS + 1_000);
  });
});

describe('open sockets per address are bounded', () => {
  /** A keep-alive connection that completed one request, so no timeout of a request applies to it. */
  async function idleConnection(): Promise<Socket> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.once('connect', () => socket.write(head('GET', '/health', [['host', 'x']])));
      socket.once('data', () => resolve());
    });
    return socket;
  }

  it(`past ${MAX_SOCKETS} open connections from one address, new ones are closed at once and counted; a freed slot is reused`, async () => {
    const open: Socket[] = [];
    try {
      while (stack.gateway.sockets.openFrom('127.0.0.1') < MAX_SOCKETS) open.push(await idleConnection());
      const before = stack.gateway.sockets.refused;
      const extra = await rawExchange(port, [head('GET', '/health', [['host', 'x']])], {
        untilClose: true,
        timeoutMs: 5_000,
      });
      expect(extra.closed).toBe(true);
      expect(extra.response).toBeNull();
      expect(extra.elapsedMs).toBeLessThan(500);
      expect(stack.gateway.sockets.refused).toBe(before + 1);
      expect(stack.logs.some((l) => l.includes('too many connections from one address'))).toBe(true);

      // The connections already open still serve.
      const reply = new Promise<string>((r) => open[0]!.once('data', (d) => r(d.toString())));
      open[0]!.write(head('GET', '/health', [['host', 'x']]));
      expect(await reply).toMatch(/^HTTP\/1\.1 200/);

      open.pop()!.destroy();
      await waitFor(() => stack.gateway.sockets.openFrom('127.0.0.1') < MAX_SOCKETS, {
        timeout: 1_000,
        what: 'the closed socket to be let go',
      });
      const again = await rawExchange(port, [
        head('GET', '/health', [
          ['host', 'x'],
          ['connection', 'close'],
        ]),
      ]);
      expect(again.response!.status).toBe(200);
      expect(stack.gateway.sockets.refused).toBe(before + 1);
    } finally {
      for (const s of open) s.destroy();
    }
  });
});
