import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../../services/gateway/src/accounts/service';
import { PROVIDER_KEY } from '../../../services/gateway/test/harness';
import { parseSse } from '../../../services/gateway/test/sse-read';
import type { KeygateOptions } from '../src/index';
import { clientFor, startStack, type Stack } from './helpers';

const PACED = { 'x-emulator-scenario': 'paced', 'x-emulator-interval-ms': '15', 'x-emulator-deltas': '24' };
const REQUEST = {
  model: 'claude-opus-4-5',
  max_tokens: 64,
  messages: [{ role: 'user' as const, content: 'Tell me about gateways, at length.' }],
};

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
}, 60_000);
afterAll(() => stack?.close());

/** A TCP relay to the gateway that cuts its first connection once some of the stream has passed. */
async function cuttingRelay() {
  const target = new URL(stack.gateway.url);
  const state = { connections: 0, cut: false };
  const sockets = new Set<Socket>();
  const relay: Server = createServer((client) => {
    state.connections++;
    sockets.add(client);
    const upstream = connect(Number(target.port), target.hostname);
    client.pipe(upstream);
    let passed = 0;
    upstream.on('data', (chunk: Buffer) => {
      passed += chunk.length;
      client.write(chunk);
      if (!state.cut && passed > 2_000) {
        state.cut = true;
        client.destroy();
        upstream.destroy();
      }
    });
    upstream.on('end', () => client.end());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(relay.address() as { port: number }).port}`,
    state,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((r) => relay.close(r));
    },
  };
}

/** Streams the request through `client`; what the caller's loop saw, and how it ended. */
async function readAll(options: KeygateOptions & { baseURL: string }) {
  const client = clientFor(stack, { maxRetries: 0, ...options });
  const stream = await client.messages.create({ ...REQUEST, stream: true }, { headers: PACED });
  const kinds: string[] = [];
  let text = '';
  let error: unknown = null;
  try {
    for await (const event of stream) {
      kinds.push(event.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    }
  } catch (err) {
    error = err;
  }
  return { client, kinds, text, error };
}

/** The emulator's whole reply to the same request, straight from it. */
async function wordsOfWholeReply(): Promise<string> {
  const direct = await fetch(`${stack.emulator.url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': PROVIDER_KEY, 'content-type': 'application/json', ...PACED },
    body: JSON.stringify({ ...REQUEST, stream: true }),
  });
  return parseSse(await direct.text())
    .events.filter((e) => e.event === 'content_block_delta')
    .map((e) => JSON.parse(e.data).delta.text as string)
    .join('');
}

/** A live key of the stack's account whose streams are resumable without asking. */
async function resumableKey() {
  return createKey(stack.deps, {
    accountId: stack.account.id,
    kind: 'live',
    app: 'mobile',
    resumableStreams: true,
  });
}

describe('resumable streams in the SDK', () => {
  it('the SDK resumes a dropped connection on its own: the caller reads one whole stream', async () => {
    const relay = await cuttingRelay();
    try {
      const { client, kinds, text, error } = await readAll({ baseURL: relay.url, resumeStreams: true });
      expect(error).toBeNull();
      expect(relay.state).toEqual({ connections: 2, cut: true });
      expect(kinds[0]).toBe('message_start');
      expect(kinds.at(-1)).toBe('message_stop');
      expect(kinds.filter((k) => k === 'message_start')).toHaveLength(1);
      // The same words as the emulator's whole reply, each once.
      expect(text).toBe(await wordsOfWholeReply());
      // One call, its usage as the provider counted it, in the SDK's record and the call log.
      await expect.poll(() => client.records.length).toBe(1);
      const rows = (await stack.calls()).filter((r) => r.key_id === stack.keyId);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: 200, partial: false, estimated: false });
      expect(client.records[0]!.usage!.output_tokens).toBe(Number(rows[0]!.output_tokens));
    } finally {
      await relay.close();
    }
  });

  it('unset, the key decides: a key with resumable streams is resumed without the app asking', async () => {
    const { key, secret } = await resumableKey();
    const relay = await cuttingRelay();
    try {
      const { client, kinds, text, error } = await readAll({ baseURL: relay.url, appKey: secret });
      expect(error).toBeNull();
      expect(relay.state).toEqual({ connections: 2, cut: true });
      expect(kinds.at(-1)).toBe('message_stop');
      expect(text).toBe(await wordsOfWholeReply());
      await expect.poll(() => client.records.length).toBe(1);
      const rows = (await stack.calls()).filter((r) => r.key_id === key.id);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: 200, partial: false, estimated: false });
    } finally {
      await relay.close();
    }
  });

  it('resumeStreams: false tells the gateway not to keep the stream, even on such a key: the cut reaches the app', async () => {
    const { key, secret } = await resumableKey();
    const relay = await cuttingRelay();
    try {
      const { kinds, error } = await readAll({ baseURL: relay.url, appKey: secret, resumeStreams: false });
      expect(relay.state).toEqual({ connections: 1, cut: true });
      expect(kinds).not.toContain('message_stop');
      expect(error).toBeInstanceOf(Error);
      // Not kept: the gateway stopped reading when the client left, and recorded a partial call.
      await expect
        .poll(async () => (await stack.calls()).filter((r) => r.key_id === key.id).map((r) => r.partial), {
          timeout: 10_000,
        })
        .toEqual([true]);
    } finally {
      await relay.close();
    }
  });
});
