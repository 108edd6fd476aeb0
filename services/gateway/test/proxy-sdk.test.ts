import Anthropic from '@anthropic-ai/sdk';
import { makeTestPdf } from '@keygate/pdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedColumns, startStack, type Stack } from './harness';

let stack: Stack;
let client: Anthropic;

beforeAll(async () => {
  stack = await startStack();
  client = new Anthropic({
    baseURL: stack.gateway.url,
    authToken: stack.appKey,
    apiKey: null,
    maxRetries: 0,
  });
});
afterAll(() => stack?.close());

const MODEL = 'claude-opus-4-5';

async function rowFor(requestId: string | null | undefined) {
  const rows = await stack.calls();
  const row = rows.find((r) => r.upstream_request_id === requestId);
  expect(row, `call row for ${requestId}`).toBeDefined();
  return row!;
}

describe('the official SDK through the gateway', () => {
  it('messages.create: the answer and the recorded usage equal what the provider served', async () => {
    const { data: msg, response } = await client.messages
      .create({
        model: MODEL,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'Hello there, gateway' }],
      })
      .withResponse();
    const entry = stack.emulator.ledger.find(msg.id)!;
    expect(entry).toBeDefined();
    expect(msg.usage).toEqual(entry.usage);
    const row = await rowFor(response.headers.get('request-id'));
    expect(row).toMatchObject({
      ...expectedColumns(entry.usage!),
      key_id: stack.keyId,
      app: 'test-app',
      environment: 'ci',
      model: msg.model,
      stream: false,
      status: 200,
      error_type: null,
      partial: false,
      upstream_message_id: msg.id,
    });
    expect(row.usage).toEqual(entry.usage);
    expect(response.headers.get('keygate-request-id')).toBe(row.id);
  });

  it('messages.stream: finalMessage() and the recorded usage equal the ledger', async () => {
    const stream = client.messages.stream({
      model: MODEL,
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Stream me a reply' }],
    });
    const msg = await stream.finalMessage();
    const entry = await stack.emulator.ledger.waitFor((e) => e.messageId === msg.id, 2000);
    expect(msg.usage).toEqual(entry.usage);
    const row = await rowFor(entry.requestId);
    expect(row).toMatchObject({
      ...expectedColumns(entry.usage!),
      stream: true,
      status: 200,
      partial: false,
      upstream_message_id: msg.id,
    });
    expect(row.ttfb_ms).toBeGreaterThan(0);
  });

  it('a tool round trip works and each call is recorded under its group', async () => {
    const tools: Anthropic.Tool[] = [
      {
        name: 'get_weather',
        description: 'Weather for a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ];
    const group = { headers: { 'keygate-group-id': 'grp_weather_loop' } };
    const first = await client.messages.create(
      { model: MODEL, max_tokens: 256, tools, messages: [{ role: 'user', content: 'Weather in Paris?' }] },
      group,
    );
    expect(first.stop_reason).toBe('tool_use');
    const toolUse = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    expect(typeof (toolUse.input as { city: unknown }).city).toBe('string');
    const second = await client.messages.create(
      {
        model: MODEL,
        max_tokens: 256,
        tools,
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: first.content },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '18°C, clear' }],
          },
        ],
      },
      group,
    );
    expect(second.stop_reason).toBe('end_turn');
    const rows = (await stack.calls()).filter((r) => r.group_id === 'grp_weather_loop');
    expect(rows.map((r) => r.upstream_message_id)).toEqual([first.id, second.id]);
    expect(rows.reduce((s, r) => s + r.output_tokens, 0)).toBe(
      first.usage.output_tokens + second.usage.output_tokens,
    );
  });

  it('a PDF document is forwarded byte for byte and its pages are counted', async () => {
    const pdf = Buffer.from(await makeTestPdf({ pages: 3 })).toString('base64');
    const msg = await client.messages.create({
      model: MODEL,
      max_tokens: 256,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
            { type: 'text', text: 'Summarize as bullets' },
          ],
        },
      ],
    });
    const entry = stack.emulator.ledger.find(msg.id)!;
    expect(msg.usage.input_tokens).toBeGreaterThan(3 * 1000);
    expect((await rowFor(entry.requestId)).input_tokens).toBe(entry.usage!.input_tokens);
  });

  it('count_tokens and models pass through and are attributed to the key', async () => {
    const counted = await client.messages.countTokens({
      model: MODEL,
      messages: [{ role: 'user', content: 'count me' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
    const models = await client.models.list({ limit: 2 });
    expect(models.data.length).toBe(2);
    const one = await client.models.retrieve(models.data[0]!.id);
    expect(one.id).toBe(models.data[0]!.id);
    const rows = await stack.calls();
    expect(rows.filter((r) => r.endpoint === 'count_tokens').length).toBeGreaterThanOrEqual(1);
    expect(
      rows.filter((r) => r.endpoint === 'models' && r.key_id === stack.keyId).length,
    ).toBeGreaterThanOrEqual(2);
  });
});

describe('credentials', () => {
  it('sends the provider key upstream and never the app key', async () => {
    await client.messages.create(
      { model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'anthropic-beta': 'some-beta-2025-01-01' } },
    );
    const entry = stack.emulator.ledger.last()!;
    expect(entry.headers['x-api-key']).toBeDefined();
    expect(entry.headers.authorization).toBeUndefined();
    expect(entry.headers['anthropic-beta']).toBe('some-beta-2025-01-01');
    expect(entry.headers['anthropic-version']).toBeDefined();
    expect(JSON.stringify(stack.emulator.ledger.entries.map((e) => e.headers))).not.toContain(stack.appKey);
    expect(stack.logs.join('')).not.toContain(entry.headers['x-api-key']);
    const rows = await stack.calls();
    expect(JSON.stringify(rows)).not.toContain(entry.headers['x-api-key']);
  });

  it('defaults anthropic-version to 2023-06-01 when the client sends none', async () => {
    const res = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.appKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'v' }] }),
    });
    expect(res.status).toBe(200);
    expect(stack.emulator.ledger.last()!.headers['anthropic-version']).toBe('2023-06-01');
  });

  it('accepts an app key in x-api-key for older clients', async () => {
    const old = new Anthropic({ baseURL: stack.gateway.url, apiKey: stack.appKey, maxRetries: 0 });
    const msg = await old.messages.create({
      model: MODEL,
      max_tokens: 8,
      messages: [{ role: 'user', content: 'old client' }],
    });
    expect(msg.type).toBe('message');
  });

  it.each([
    ['no key', undefined, /Missing app key/],
    ['a provider key', `sk-ant-api03-${'x'.repeat(40)}`, /Anthropic API key.*Bearer kg_live_/],
    ['a malformed key', 'kg_live_nope', /not a Keygate key/],
  ])('refuses %s with a provider-shaped 401 that says what to send', async (_name, token, message) => {
    const res = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(res.status).toBe(401);
    const body = (await res.json()) as { request_id: string; error: { message: string } };
    expect(body).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    expect(body.error.message).toMatch(message);
    expect(body.request_id).toMatch(/^req_/);
    expect(res.headers.get('request-id')).toBe(body.request_id);
  });

  it('refuses an unknown well-formed key and an admin key', async () => {
    const { generateKey } = await import('../src/auth/keys');
    const admin = await stack.newKey({ kind: 'admin' });
    for (const [token, message] of [
      [generateKey('live'), /does not exist/],
      [admin.secret, /Admin keys/],
    ] as const) {
      const bad = new Anthropic({
        baseURL: stack.gateway.url,
        authToken: token,
        apiKey: null,
        maxRetries: 0,
      });
      const err = await bad.messages
        .create({ model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
        .catch((e) => e);
      expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
      expect(err.error.error.message).toMatch(message);
    }
  });
});
