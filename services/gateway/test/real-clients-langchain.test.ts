import { ChatAnthropic } from '@langchain/anthropic';
import type { AIMessage, AIMessageChunk } from '@langchain/core/messages';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { throughBothWays, useClientStacks } from './real-clients';

const ctx = useClientStacks();

const chat = (baseUrl: string, apiKey: string) =>
  new ChatAnthropic({
    model: 'claude-sonnet-4-5',
    apiKey,
    anthropicApiUrl: baseUrl,
    maxTokens: 200,
    maxRetries: 0,
  });

const PROMPT = [
  new SystemMessage('You answer in one short paragraph.'),
  new HumanMessage('Which gateway carries this call?'),
];

/** What the caller gets, without the ids the provider draws at random for each message. */
function answer(m: AIMessage | AIMessageChunk) {
  return {
    content:
      typeof m.content === 'string' ? m.content : m.content.map((block) => ({ ...block, id: undefined })),
    toolCalls: m.tool_calls?.map(({ name, args, type }) => ({ name, args, type })) ?? [],
    usage: m.usage_metadata,
    stopReason: m.response_metadata?.stop_reason ?? null,
  };
}

describe('LangChain ChatAnthropic through a real gateway, unchanged', () => {
  it('invoke: same request bytes at the provider, same answer, exact usage', async () => {
    const { straight, through, rows } = await throughBothWays(ctx.stack, ctx.direct, (url, key) =>
      chat(url, key).invoke(PROMPT),
    );
    expect(answer(through)).toEqual(answer(straight));
    expect(String(through.content)).toMatch(/^Emulated reply to: Which gateway carries this call\?/);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ stream: false, status: 200, key_id: ctx.stack.keyId });
    expect(through.usage_metadata).toMatchObject({
      input_tokens: rows[0]!.input_tokens,
      output_tokens: rows[0]!.output_tokens,
    });
  });

  it('stream: same request bytes, same text, exact usage', async () => {
    const { straight, through, rows } = await throughBothWays(ctx.stack, ctx.direct, async (url, key) => {
      let whole: AIMessageChunk | undefined;
      for await (const chunk of await chat(url, key).stream(PROMPT))
        whole = whole ? whole.concat(chunk) : chunk;
      return whole!;
    });
    expect(answer(through)).toEqual(answer(straight));
    expect(String(through.content)).toMatch(/^Emulated reply to: /);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ stream: true, status: 200, partial: false });
    // LangChain adds message_start's output_tokens (1) to message_delta's running total; the
    // gateway records the provider's figure (checked against the ledger above).
    expect(through.usage_metadata).toMatchObject({
      input_tokens: rows[0]!.input_tokens,
      output_tokens: rows[0]!.output_tokens + 1,
    });
  });

  it('a tool call through bindTools: same request bytes, same tool call, exact usage', async () => {
    const weather = {
      name: 'get_weather',
      description: 'The weather in a city.',
      schema: z.object({ city: z.string(), unit: z.enum(['celsius', 'fahrenheit']) }),
    };
    const { straight, through, rows } = await throughBothWays(ctx.stack, ctx.direct, (url, key) =>
      chat(url, key).bindTools([weather]).invoke('What is the weather in Paris?'),
    );
    expect(answer(through)).toEqual(answer(straight));
    expect(through.tool_calls).toEqual([
      expect.objectContaining({ name: 'get_weather', args: { city: 'Paris', unit: 'celsius' } }),
    ]);
    expect(rows).toHaveLength(1);
    expect(through.usage_metadata).toMatchObject({
      input_tokens: rows[0]!.input_tokens,
      output_tokens: rows[0]!.output_tokens,
    });
  });
});
