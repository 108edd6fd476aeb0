import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from './harness';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

describe('every response carries a request id', () => {
  it('on the gateway’s own answers: health, account API, operator API, errors', async () => {
    const admin = await stack.newKey({ kind: 'admin' });
    const responses = await Promise.all([
      fetch(`${stack.gateway.url}/health`),
      fetch(`${stack.gateway.url}/v1/organizations/me`, { headers: { 'x-api-key': admin.secret } }),
      fetch(`${stack.gateway.url}/operator/v1/plans`, {
        headers: { authorization: 'Bearer operator-token-0123456789' },
      }),
      fetch(`${stack.gateway.url}/nowhere`),
    ]);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 404]);
    const ids = responses.map((r) => r.headers.get('request-id'));
    for (const id of ids) expect(id).toMatch(/^req_[0-9A-Za-z]{24}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('on proxied answers: the provider’s own id, and Keygate’s beside it', async () => {
    const res = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.appKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-opus-4-5',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'id?' }],
      }),
    });
    await res.arrayBuffer();
    expect(res.headers.get('request-id')).toBe(stack.emulator.ledger.last()!.requestId);
    expect(res.headers.get('keygate-request-id')).toMatch(/^req_/);
    expect(res.headers.get('keygate-request-id')).not.toBe(res.headers.get('request-id'));
  });
});
