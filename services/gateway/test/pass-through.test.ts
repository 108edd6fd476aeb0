import { createEmulatorHandler } from '@keygate/emulator';
import { makeTestPdf } from '@keygate/pdf';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedColumns, PROVIDER_KEY, startStack, type Stack } from './harness';

interface Received {
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** The emulator behind a server that keeps each request's bytes as they arrived. */
async function recordingProvider() {
  const emulator = createEmulatorHandler({ apiKey: PROVIDER_KEY });
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({ url: req.url ?? '', headers: req.headers, body });
      emulator(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    ledger: emulator.ledger,
  };
}

// Written by hand, not by JSON.stringify: odd spacing, key order, escapes and number forms
// that any re-serialisation on the way would change.
const UNSEEN_STREAM = Buffer.from(`{
  "model" : "claude-opus-4-5",  "max_tokens":64,
  "messages": [
    {"role": "user", "content": [{"type": "text", "text": "caf\\u00e9 \\ud83d\\ude00 \\/ slash"}, {"type": "hologram_20270101", "beams": 3.0e0, "cache_control": null}]},
    {"role": "assistant", "content": "ok"},
    {"role": "user", "content": "and now?", "speaker_hint": {"nested": [true, false, null]}},
    {"role": "system", "content": "Per-turn instruction: answer briefly.", "output_config": {"effort": "low"}}
  ],
  "stream": true,
  "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
  "output_config": {"effort": "medium"},
  "thinking": {"type": "adaptive"},
  "a_field_from_2027": [1, 2.50, -0, "\\u0041"]
}`);

const fixture = (name: string) =>
  readFileSync(new URL(`../../../packages/emulator/test/fixtures/${name}`, import.meta.url));
const CLAUDE_CODE_BODY = fixture('claude-code-2.1.330-request.json');
const CLAUDE_CODE = JSON.parse(fixture('claude-code-2.1.330-request-headers.json').toString()) as {
  url: string;
  headers: Record<string, string>;
};

const UNSEEN_JSON = Buffer.from(
  '{"messages":[{"role":"user","content":"hi"},{"role":"narrator","content":[{"type":"stage_direction","text":"enter"}]}],"max_tokens":16,"model":"claude-opus-4-5","metadata":{"user_id":"u"},"tools":[{"type":"quantum_search_20270101","name":"qs"}]}',
);

describe('the gateway passes what it does not need to understand upstream byte for byte', () => {
  let stack: Stack;
  let provider: Awaited<ReturnType<typeof recordingProvider>>;
  beforeAll(async () => {
    provider = await recordingProvider();
    stack = await startStack({ KEYGATE_UPSTREAM_URL: provider.url });
  });
  afterAll(async () => {
    await stack?.close();
    await new Promise((r) => provider?.server.close(r));
  });

  async function send(path: string, body: Buffer, headers: Record<string, string> = {}) {
    const before = provider.received.length;
    const res = await fetch(`${stack.gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.appKey}`, 'content-type': 'application/json', ...headers },
      body,
    });
    const text = await res.text();
    expect(provider.received).toHaveLength(before + 1);
    return { res, text, upstream: provider.received[before]! };
  }

  it('an unseen role, block type, message field and top-level fields, streamed, with ?beta=true and betas', async () => {
    const beta = 'per-turn-control-2026-07-01,context-management-2025-06-27,some-future-beta-2027-01-01';
    const { res, upstream } = await send('/v1/messages?beta=true', UNSEEN_STREAM, {
      'anthropic-beta': beta,
      'anthropic-version': '2023-06-01',
    });
    expect(upstream.body.equals(UNSEEN_STREAM)).toBe(true);
    expect(upstream.url).toBe('/v1/messages?beta=true');
    expect(upstream.headers['anthropic-beta']).toBe(beta);
    expect(upstream.headers['content-length']).toBe(String(UNSEEN_STREAM.length));
    expect(res.status).toBe(200);
    const entry = await provider.ledger.waitFor((e) => e.endpoint === 'messages' && e.stream, 2_000);
    expect(entry).toMatchObject({ status: 200, complete: true });
    const row = (await stack.calls()).find((r) => r.upstream_message_id === entry.messageId);
    expect(row).toMatchObject({ status: 200, ...expectedColumns(entry.usage!) });
  });

  it("a made-up role is the provider's to refuse: its answer comes back unchanged", async () => {
    const { res, text, upstream } = await send('/v1/messages', UNSEEN_JSON);
    expect(upstream.body.equals(UNSEEN_JSON)).toBe(true);
    expect(res.status).toBe(400);
    expect(JSON.parse(text)).toMatchObject({
      error: {
        type: 'invalid_request_error',
        message: "messages.1.role: Input should be 'user' or 'assistant'",
      },
    });
  });

  it('count_tokens with fields it has never seen', async () => {
    const body = Buffer.from(
      '{"model":"claude-opus-4-5","messages":[{"role":"system","content":"x"},{"role":"user","content":[{"type":"mystery"}]}],"surprise":{}}',
    );
    const { upstream } = await send('/v1/messages/count_tokens', body);
    expect(upstream.url).toBe('/v1/messages/count_tokens');
    expect(upstream.body.equals(body)).toBe(true);
  });

  it('a large body (the long-string path) with a PDF inside an unknown block', async () => {
    const pdf = Buffer.from(await makeTestPdf({ pages: 2 })).toString('base64');
    const doc = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } };
    const body = Buffer.from(
      JSON.stringify({
        model: 'claude-opus-4-5',
        max_tokens: 16,
        messages: [
          {
            role: 'user',
            content: [
              {
                type: 'bundle_of_things',
                things: [doc, { type: 'blob', data: 'Z'.repeat(2 * 1024 * 1024) }],
              },
              { type: 'text', text: 'sum' },
            ],
          },
        ],
        never_seen: 'y'.repeat(100_000),
      }),
    );
    const { upstream } = await send('/v1/messages', body);
    expect(upstream.body.equals(body)).toBe(true);
  });

  it('still inspects a PDF inside a block it does not know, and refuses a broken one before it goes upstream', async () => {
    const before = provider.received.length;
    const broken = {
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: 'not base64!!' },
    };
    const body = JSON.stringify({
      model: 'claude-opus-4-5',
      max_tokens: 16,
      messages: [{ role: 'system', content: [{ type: 'bundle_of_things', things: [broken] }] }],
    });
    const res = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.appKey}`, 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: 'messages[0].content[0].things[0].source.data: not valid base64.',
      },
    });
    expect(provider.received).toHaveLength(before);
  });

  it("Claude Code 2.1.330's captured request goes through unchanged and is recorded with the ledger's usage, under its session id", async () => {
    const { res, text, upstream } = await send(CLAUDE_CODE.url, CLAUDE_CODE_BODY, CLAUDE_CODE.headers);
    expect(res.status).toBe(200);
    expect(upstream.body.equals(CLAUDE_CODE_BODY)).toBe(true);
    expect(upstream.url).toBe('/v1/messages?beta=true');
    expect(upstream.headers['anthropic-beta']).toBe(CLAUDE_CODE.headers['anthropic-beta']);
    expect(text).toContain('event: message_stop');
    const entry = await provider.ledger.waitFor((e) => e.model === 'claude-opus-5-5', 2_000);
    const row = (await stack.calls()).find((r) => r.upstream_message_id === entry.messageId);
    expect(row).toMatchObject({
      status: 200,
      model: 'claude-opus-5-5',
      group_id: CLAUDE_CODE.headers['x-claude-code-session-id'],
      ...expectedColumns(entry.usage!),
    });
  });

  it('the same request with a kg_test_ key is answered by the built-in emulator', async () => {
    const testKey = await stack.newKey({ kind: 'test' });
    const res = await fetch(`${stack.gateway.url}${CLAUDE_CODE.url}`, {
      method: 'POST',
      headers: { ...CLAUDE_CODE.headers, authorization: `Bearer ${testKey.secret}` },
      body: CLAUDE_CODE_BODY,
    });
    const served = stack.emulator.ledger.entries.length;
    expect(res.status).toBe(200);
    const events = await res.text();
    expect(events).toMatch(/Emulated reply to: hi/);
    // Answered inside the gateway: the provider saw nothing more, and the call log has the usage it streamed.
    expect(stack.emulator.ledger.entries).toHaveLength(served);
    const row = (await stack.calls()).find((r) => r.id === res.headers.get('keygate-request-id'));
    const final = [...events.matchAll(/^data: (.*)$/gm)]
      .map((m) => JSON.parse(m[1]!))
      .find((e) => e.type === 'message_delta');
    expect(row).toMatchObject({
      key_id: testKey.id,
      status: 200,
      model: 'claude-opus-5-5',
      output_tokens: final.usage.output_tokens,
    });
  });
});
