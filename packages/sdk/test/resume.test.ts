import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDER_KEY } from '../../../services/gateway/test/harness';
import { parseSse } from '../../../services/gateway/test/sse-read';
import { clientFor, startStack, type Stack } from './helpers';

const PACED = { 'x-emulator-scenario': 'paced', 'x-emulator-interval-ms': '15', 'x-emulator-deltas': '24' };

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
}, 60_000);
afterAll(() => stack?.close());

describe('resumable streams in the SDK', () => {
  it('the SDK resumes a dropped connection on its own: the caller reads one whole stream', async () => {
    // A TCP relay that cuts the first connection once some of the stream has passed.
    const target = new URL(stack.gateway.url);
    let connections = 0;
    let cut = false;
    const sockets = new Set<Socket>();
    const relay: Server = createServer((client) => {
      connections++;
      sockets.add(client);
      const upstream = connect(Number(target.port), target.hostname);
      client.pipe(upstream);
      let passed = 0;
      upstream.on('data', (chunk: Buffer) => {
        passed += chunk.length;
        client.write(chunk);
        if (!cut && passed > 2_000) {
          cut = true;
          client.destroy();
          upstream.destroy();
        }
      });
      upstream.on('end', () => client.end());
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (relay.address() as { port: number }).port;
      const client = clientFor(stack, {
        baseURL: `http://127.0.0.1:${port}`,
        maxRetries: 0,
        resumeStreams: true,
      });
      const stream = await client.messages.create(
        {
          model: 'claude-opus-4-5',
          max_tokens: 64,
          stream: true,
          messages: [{ role: 'user', content: 'Tell me about gateways, at length.' }],
        },
        { headers: PACED },
      );
      const kinds: string[] = [];
      let text = '';
      for await (const event of stream) {
        kinds.push(event.type);
        if (event.type === 'content_block_delta' && event.delta.type === 'text_delta')
          text += event.delta.text;
      }
      expect(cut).toBe(true);
      expect(connections).toBe(2);
      expect(kinds[0]).toBe('message_start');
      expect(kinds.at(-1)).toBe('message_stop');
      expect(kinds.filter((k) => k === 'message_start')).toHaveLength(1);
      // The same words as the emulator's whole reply, each once.
      const direct = await fetch(`${stack.emulator.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': PROVIDER_KEY, 'content-type': 'application/json', ...PACED },
        body: JSON.stringify({
          model: 'claude-opus-4-5',
          max_tokens: 64,
          stream: true,
          messages: [{ role: 'user', content: 'Tell me about gateways, at length.' }],
        }),
      });
      const words = parseSse(await direct.text())
        .events.filter((e) => e.event === 'content_block_delta')
        .map((e) => JSON.parse(e.data).delta.text as string)
        .join('');
      expect(text).toBe(words);
      // One call, its usage as the provider counted it, in the SDK's record and the call log.
      await expect.poll(() => client.records.length).toBe(1);
      const rows = await stack.calls();
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: 200, partial: false, estimated: false });
      expect(client.records[0]!.usage!.output_tokens).toBe(Number(rows[0]!.output_tokens));
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((r) => relay.close(r));
    }
  });
});
