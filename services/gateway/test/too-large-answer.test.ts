import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from './harness';

// A body refused before it is read (declared over the limit) must still reach the client as an
// answer. Closing the connection while request bytes are still arriving resets it, and a
// client that has not yet read the answer (busy, or on a loaded machine) loses it: the
// hostile-input property test saw this. The client here waits before reading, as a busy one does.
const LIMIT = 64 * 1024;
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ KEYGATE_MAX_BODY_BYTES: String(LIMIT) });
});
afterAll(() => stack?.close());

function slowReader(port: number, head: string, body: string, waitMs: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.pause();
    socket.on('error', () => {});
    socket.on('data', (d) => (received += d.toString('latin1')));
    socket.on('close', () => resolve(received));
    socket.write(head);
    socket.end(body);
    setTimeout(() => socket.resume(), waitMs);
  });
}

describe('a body over the limit, still being sent', () => {
  for (const [name, extra] of [
    ['exact length', 0],
    ['length declared 10 bytes past the body', 10],
  ] as const) {
    it(`${name}: a client that reads late still gets the 413 in the provider's shape`, async () => {
      const body = JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'a'.repeat(4 * 1024 * 1024) }],
      });
      const head = `POST /v1/messages HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\nauthorization: Bearer ${stack.appKey}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body) + extra}\r\n\r\n`;
      const received = await slowReader(stack.gateway.port, head, body, 300);
      expect(received, 'no answer before the connection was reset').toMatch(/^HTTP\/1\.1 413 /);
      expect(received).toMatch(/"type":"request_too_large"/);
      expect(received).toMatch(/"request_id":"req_/);
    }, 20_000);
  }
});
