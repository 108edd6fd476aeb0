import type Anthropic from '@anthropic-ai/sdk';
import { makeTestPdf } from '@keygate/pdf';
import { describe, expect, it } from 'vitest';
import { ask, MODEL, useEmulator } from './helpers';

const ctx = useEmulator();

const weather: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather for a place',
  input_schema: {
    type: 'object',
    properties: { location: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['location', 'unit'],
  },
};

describe('messages through the official SDK', () => {
  it('create: a message in the provider shape, with complete usage and a ledger entry', async () => {
    const { data: message, request_id } = await ctx.client.messages
      .create(ask('Hello there, emulator'))
      .withResponse();
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: MODEL,
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
    expect(message.id).toMatch(/^msg_01[0-9A-Za-z]{22}$/);
    expect(message.content[0]).toMatchObject({
      type: 'text',
      text: expect.stringMatching(/^Emulated reply to: Hello there, emulator/),
    });
    expect(message.usage).toEqual({
      input_tokens: Math.ceil('Hello there, emulator'.length / 4) + 10,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      output_tokens: 24,
      server_tool_use: { web_search_requests: 0 },
      service_tier: 'standard',
      // Opus 4.5 predates data-residency controls: no inference_geo.
      speed: 'standard',
    });
    const entry = ctx.emulator.ledger.byRequestId(request_id!)!;
    expect(entry).toMatchObject({
      messageId: message.id,
      endpoint: 'messages',
      model: MODEL,
      stream: false,
      status: 200,
      complete: true,
      usage: message.usage,
    });
    expect(entry.headers['x-api-key']).toBe('sk-ant-emulator-key');
    expect(entry.headers['anthropic-version']).toEqual(expect.any(String));
  });

  it('stream: finalMessage() usage equals the ledger entry', async () => {
    const stream = ctx.client.messages.stream(ask('Stream me something'), {
      headers: { 'x-emulator-output-tokens': '40' },
    });
    const texts: string[] = [];
    stream.on('text', (t) => texts.push(t));
    const message = await stream.finalMessage();
    expect(texts.length).toBeGreaterThan(1);
    expect(texts.join('')).toBe((message.content[0] as Anthropic.TextBlock).text);
    const entry = await ctx.emulator.ledger.waitFor((e) => e.messageId === message.id, 2_000);
    expect(entry).toMatchObject({ stream: true, complete: true, status: 200 });
    expect(entry.usage).toMatchObject({ ...message.usage, output_tokens: 40 });
    expect(entry.eventsSent).toBeGreaterThan(5);
  });

  it('the beta path (?beta=true) answers the same way', async () => {
    const message = await ctx.client.beta.messages.create(ask('Beta hello'));
    expect(message.usage.output_tokens).toBe(24);
  });

  it('honours max_tokens and stop_sequences', async () => {
    const cut = await ctx.client.messages.create(ask('Hi', { max_tokens: 3 }));
    expect(cut).toMatchObject({ stop_reason: 'max_tokens', usage: { output_tokens: 3 } });
    const stopped = await ctx.client.messages.create(ask('Hi', { stop_sequences: ['deterministic'] }));
    expect(stopped).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'deterministic' });
    expect((stopped.content[0] as Anthropic.TextBlock).text).not.toContain('deterministic');
  });

  it('a tool round trip: tool_use with schema-valid input, then text after the result', async () => {
    const first = await ctx.client.messages.create(ask('Weather in Paris?', { tools: [weather] }));
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    expect(call).toMatchObject({
      name: 'get_weather',
      input: { location: expect.any(String), unit: 'celsius' },
    });
    expect(call.id).toMatch(/^toolu_/);

    const second = await ctx.client.messages.create({
      ...ask('Weather in Paris?', { tools: [weather] }),
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny and 21 C' }] },
      ],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content.map((b) => b.type)).toEqual(['text']);
  });

  it('streamed tool input arrives as input_json_delta chunks the SDK reassembles', async () => {
    const stream = ctx.client.messages.stream(
      ask('Weather?', { tools: [weather], tool_choice: { type: 'tool', name: 'get_weather' } }),
    );
    const partials: string[] = [];
    stream.on('inputJson', (partial) => partials.push(partial));
    const message = await stream.finalMessage();
    expect(message.content.map((b) => b.type)).toEqual(['tool_use']);
    expect(partials.length).toBeGreaterThan(2);
    expect((message.content[0] as Anthropic.ToolUseBlock).input).toEqual({
      location: 'Paris, France',
      unit: 'celsius',
    });
  });

  it('malformed_tool_input leaves a required property out', async () => {
    const message = await ctx.client.messages.create(ask('Weather?', { tools: [weather] }), {
      headers: { 'x-emulator-scenario': 'malformed_tool_input' },
    });
    const call = message.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    expect(call.input).not.toHaveProperty('location');
  });

  it('thinking: a thinking block with a signature comes first, in both modes', async () => {
    const params = ask('Think about it', {
      max_tokens: 4_000,
      thinking: { type: 'enabled', budget_tokens: 2_000 },
    });
    const message = await ctx.client.messages.create(params);
    expect(message.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect(message.usage.output_tokens).toBe(16 + 24);
    const streamed = await ctx.client.messages.stream(params).finalMessage();
    const thinking = streamed.content[0] as Anthropic.ThinkingBlock;
    expect(thinking.thinking).toMatch(/^Emulated thinking about: Think about it/);
    expect(thinking.signature.length).toBeGreaterThan(20);
  });

  it('web search: server tool blocks and server_tool_use counted in usage', async () => {
    const params = ask('Latest news?', { tools: [{ type: 'web_search_20250305', name: 'web_search' }] });
    const message = await ctx.client.messages.stream(params).finalMessage();
    expect(message.content.map((b) => b.type)).toEqual(['server_tool_use', 'web_search_tool_result', 'text']);
    expect(message.usage.server_tool_use).toEqual({ web_search_requests: 1 });
    expect(ctx.emulator.ledger.find(message.id)!.usage!.server_tool_use).toEqual({ web_search_requests: 1 });
  });

  it('prompt caching: the first call writes, the second reads, input stays disjoint', async () => {
    const system: Anthropic.TextBlockParam[] = [
      { type: 'text', text: 'You are terse. '.repeat(400), cache_control: { type: 'ephemeral', ttl: '1h' } },
    ];
    const first = await ctx.client.messages.create(ask('One?', { system }));
    const second = await ctx.client.messages.stream(ask('Two?', { system })).finalMessage();
    expect(first.usage).toMatchObject({
      cache_creation_input_tokens: 1_500,
      cache_read_input_tokens: 0,
      input_tokens: 11,
    });
    expect(first.usage.cache_creation).toEqual({
      ephemeral_5m_input_tokens: 0,
      ephemeral_1h_input_tokens: 1_500,
    });
    expect(second.usage).toMatchObject({
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 1_500,
      input_tokens: 11,
    });
    ctx.emulator.cache.clear();
    const third = await ctx.client.messages.create(ask('Three?', { system }));
    expect(third.usage.cache_creation_input_tokens).toBe(1_500);
  });

  it('cache scenarios force a cache share without cache_control', async () => {
    const read = await ctx.client.messages.create(ask('x'.repeat(400)), {
      headers: { 'x-emulator-scenario': 'cache_read' },
    });
    expect(read.usage).toMatchObject({ input_tokens: 28, cache_read_input_tokens: 82 });
    const write = await ctx.client.messages.create(ask('x'.repeat(400)), {
      headers: { 'x-emulator-scenario': 'cache_write_5m' },
    });
    expect(write.usage.cache_creation).toEqual({
      ephemeral_5m_input_tokens: 82,
      ephemeral_1h_input_tokens: 0,
    });
  });

  it('count_tokens follows the same rule, PDFs included', async () => {
    const pdf = Buffer.from(await makeTestPdf({ pages: 2 })).toString('base64');
    const messages: Anthropic.MessageParam[] = [
      {
        role: 'user',
        content: [
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
          { type: 'text', text: 'Summarise' },
        ],
      },
    ];
    const counted = await ctx.client.messages.countTokens({ model: MODEL, messages });
    expect(counted).toEqual({ input_tokens: 2 * 1_600 + 3 + 10 });
    const message = await ctx.client.messages.create({ model: MODEL, max_tokens: 100, messages });
    expect(message.usage.input_tokens).toBe(counted.input_tokens);
    expect(ctx.emulator.ledger.last()).toMatchObject({ endpoint: 'messages', usage: message.usage });
  });

  it('an unreadable PDF is a 400 invalid_request_error, like the provider', async () => {
    const error = await ctx.client.messages
      .create({
        model: MODEL,
        max_tokens: 100,
        messages: [
          {
            role: 'user',
            content: [
              {
                type: 'document',
                source: {
                  type: 'base64',
                  media_type: 'application/pdf',
                  data: Buffer.from('not a pdf').toString('base64'),
                },
              },
            ],
          },
        ],
      })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      status: 400,
      error: { type: 'error', error: { type: 'invalid_request_error' } },
    });
  });

  it('ignores unknown request fields', async () => {
    const message = await ctx.client.messages.create({
      ...ask('Hi'),
      some_future_field: { nested: true },
    } as Anthropic.MessageCreateParamsNonStreaming);
    expect(message.stop_reason).toBe('end_turn');
  });
});
