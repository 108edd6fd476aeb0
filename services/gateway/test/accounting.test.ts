import { startEmulator, type Emulator, type LedgerEntry } from '@keygate/emulator';
import { estimateOutputTokens } from '@keygate/protocol';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedColumns, PROVIDER_KEY, startStack, type Stack } from './harness';
import { waitFor } from './kit/wait';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

const MODEL = 'claude-opus-4-5';

function call(
  scenario: string | null,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  return fetch(`${stack.gateway.url}/v1/messages`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stack.appKey}`,
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      ...(scenario ? { 'x-emulator-scenario': scenario } : {}),
      ...headers,
    },
    body: JSON.stringify({
      model: MODEL,
      max_tokens: 512,
      messages: [{ role: 'user', content: 'Account for every token, please.' }],
      ...body,
    }),
  });
}

async function settle(
  res: Response,
): Promise<{ entry: LedgerEntry; row: Record<string, any>; text: string }> {
  const text = await res.text().catch(() => '');
  const requestId = res.headers.get('request-id');
  const entry = await stack.emulator.ledger.waitFor(
    (e) => e.requestId === requestId && e.endedAt !== null,
    3000,
  );
  const row = await waitFor(
    async () => (await stack.calls()).find((r) => r.upstream_request_id === requestId),
    {
      timeout: 5_000,
      what: `the call row of ${requestId}`,
    },
  );
  return { entry, row, text };
}

const cacheBody = {
  system: [
    {
      type: 'text',
      text: 'You are a careful assistant. '.repeat(40),
      cache_control: { type: 'ephemeral', ttl: '1h' },
    },
  ],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Long shared context. '.repeat(60), cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Question?' },
      ],
    },
  ],
};

describe('recorded usage equals the provider ledger, field by field', () => {
  it.each([
    ['plain, not streamed', null, {}],
    ['plain, streamed', null, { stream: true }],
    ['several message_delta running totals (never summed)', 'multi_delta', { stream: true }],
    ['thinking, streamed', 'thinking', { stream: true }],
    ['5m cache write, streamed', 'cache_write_5m', { stream: true }],
    ['1h cache write, not streamed', 'cache_write_1h', {}],
    ['cache read, streamed', 'cache_read', { stream: true }],
    ['cache_control breakpoints, streamed', null, { stream: true, ...cacheBody }],
    [
      'web search server tool',
      null,
      { stream: true, tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
    ],
  ])('%s', async (_name, scenario, body) => {
    const { entry, row } = await settle(await call(scenario, body));
    expect(entry.complete).toBe(true);
    expect(row).toMatchObject({
      ...expectedColumns(entry.usage!),
      partial: false,
      estimated: false,
      error_type: null,
      status: 200,
    });
    expect(row.usage).toEqual(entry.usage);
  });

  it('prompt caching: the second identical call reads what the first wrote', async () => {
    const first = await settle(
      await call(null, { stream: true, ...cacheBody, metadata: { user_id: 'cache-pair' } }),
    );
    const second = await settle(
      await call(null, { stream: true, ...cacheBody, metadata: { user_id: 'cache-pair' } }),
    );
    expect(second.row.cache_read_input_tokens).toBe(second.entry.usage!.cache_read_input_tokens);
    expect(second.row.cache_read_input_tokens).toBeGreaterThan(0);
    expect(first.row.cache_creation_input_tokens + first.row.cache_read_input_tokens).toBeGreaterThan(0);
  });

  it('an error event after HTTP 200 is recorded with the usage seen before it', async () => {
    const { entry, row, text } = await settle(await call('stream_error', { stream: true }));
    expect(text).toContain('event: error');
    // No message_delta came: output is estimated from the text forwarded (abort-estimate.test.ts).
    const forwarded = text
      .split('\n\n')
      .filter((e) => e.startsWith('event: content_block_delta'))
      .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)).delta.text)
      .join('');
    const output_tokens = Math.max(
      entry.usage!.output_tokens,
      estimateOutputTokens(Buffer.byteLength(forwarded)),
    );
    expect(output_tokens).toBeGreaterThan(1);
    expect(row).toMatchObject({
      ...expectedColumns(entry.usage!),
      output_tokens,
      status: 200,
      error_type: 'overloaded_error',
      partial: true,
      estimated: true,
    });
  });

  it('a stream the provider cuts is recorded as partial with the usage it had sent', async () => {
    const res = await call('stream_cut', { stream: true }, { 'x-emulator-cut-after': '3' });
    const { entry, row } = await settle(res);
    expect(entry.complete).toBe(false);
    expect(row).toMatchObject({
      ...expectedColumns(entry.usage!),
      partial: true,
      estimated: true,
      error_type: 'api_error',
    });
  });

  it('upstream error bodies pass through unchanged and are recorded', async () => {
    for (const [scenario, status, type] of [
      ['rate_limit', 429, 'rate_limit_error'],
      ['overloaded', 529, 'overloaded_error'],
      ['api_error', 500, 'api_error'],
      ['invalid_request', 400, 'invalid_request_error'],
    ] as const) {
      const direct = await fetch(`${stack.emulator.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'x-api-key': PROVIDER_KEY,
          'content-type': 'application/json',
          'x-emulator-scenario': scenario,
        },
        body: JSON.stringify({ model: MODEL, max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }),
      });
      const directBody = (await direct.json()) as { request_id: string };
      const res = await call(scenario);
      const { row, text } = await settle(res);
      expect(res.status).toBe(status);
      const body = JSON.parse(text);
      // Same bytes but for the provider's own request id.
      expect({ ...body, request_id: 'x' }).toEqual({ ...directBody, request_id: 'x' });
      expect(body.request_id).toBe(res.headers.get('request-id'));
      if (scenario === 'rate_limit')
        expect(res.headers.get('retry-after')).toBe(direct.headers.get('retry-after'));
      expect(row).toMatchObject({ status, error_type: type, input_tokens: 0, output_tokens: 0 });
    }
  });

  it('a client that goes away mid-stream: upstream aborted, call recorded as partial', async () => {
    const controller = new AbortController();
    const res = await call(
      'paced',
      { stream: true },
      { 'x-emulator-deltas': '40', 'x-emulator-interval-ms': '25' },
    ).then((r) => r);
    const requestId = res.headers.get('request-id');
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('content_block_delta'))
      seen += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    controller.abort();
    const entry = await stack.emulator.ledger.waitFor(
      (e) => e.requestId === requestId && e.endedAt !== null,
      3000,
    );
    expect(entry.complete).toBe(false);
    expect(entry.eventsSent).toBeLessThan(40);
    const { row } = await settle(new Response(null, { headers: { 'request-id': requestId! } }));
    const { output_tokens: _, ...rest } = expectedColumns(entry.usage!);
    expect(row).toMatchObject({ ...rest, partial: true, estimated: true, error_type: 'client_closed' });
    expect(row.output_tokens).toBeGreaterThanOrEqual(1);
    expect(row.input_tokens).toBeGreaterThan(0);
  });
});

describe('network chunking cannot change the count', () => {
  let replay: Server;
  let stream: Buffer;
  let entry: LedgerEntry;
  let upstream: Emulator;

  beforeAll(async () => {
    upstream = await startEmulator({ port: 0, apiKey: PROVIDER_KEY });
    const res = await fetch(`${upstream.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': PROVIDER_KEY,
        'content-type': 'application/json',
        'x-emulator-scenario': 'multi_delta,thinking',
      },
      body: JSON.stringify({
        model: MODEL,
        max_tokens: 300,
        stream: true,
        ...cacheBody,
        messages: [{ role: 'user', content: 'Grüße 👋 — “quotes” and accents é' }],
      }),
    });
    stream = Buffer.from(await res.arrayBuffer());
    entry = upstream.ledger.last()!;
    // Replays the recorded stream one byte per write, each in its own TCP segment.
    replay = createServer(async (req, res) => {
      for await (const _ of req);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req_replay' });
      res.socket!.setNoDelay(true);
      for (let i = 0; i < stream.length; i++) {
        res.write(stream.subarray(i, i + 1));
        if (i % 8 === 0) await new Promise((r) => setImmediate(r));
      }
      res.end();
    });
    await new Promise<void>((r) => replay.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    replay?.close();
    await upstream?.close();
  });

  it('a stream delivered byte by byte is counted exactly', async () => {
    const local = await startStack({
      KEYGATE_UPSTREAM_URL: `http://127.0.0.1:${(replay.address() as AddressInfo).port}`,
    });
    try {
      const res = await fetch(`${local.gateway.url}/v1/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${local.appKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: MODEL,
          max_tokens: 300,
          stream: true,
          messages: [{ role: 'user', content: 'x' }],
        }),
      });
      expect(Buffer.from(await res.arrayBuffer()).equals(stream)).toBe(true);
      const [row] = await local.calls();
      expect(row).toMatchObject({ ...expectedColumns(entry.usage!), partial: false });
      expect(row!.usage).toEqual(entry.usage);
      expect(entry.usage!.cache_creation_input_tokens + entry.usage!.cache_read_input_tokens).toBeGreaterThan(
        0,
      );
    } finally {
      await local.close();
    }
  });
});
