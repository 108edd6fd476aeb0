import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, streamText } from 'ai';
import { describe, expect, it } from 'vitest';
import { throughBothWays, useClientStacks } from './real-clients';

const ctx = useClientStacks();

const model = (baseUrl: string, apiKey: string) =>
  createAnthropic({ baseURL: `${baseUrl}/v1`, apiKey })('claude-sonnet-4-5');

const ASK = {
  system: 'You answer in one short paragraph.',
  prompt: 'Which gateway carries this call?',
  maxOutputTokens: 200,
  maxRetries: 0,
};

describe('Vercel AI SDK (@ai-sdk/anthropic) through a real gateway, unchanged', () => {
  it('generateText: same request bytes at the provider, same answer, exact usage', async () => {
    const { straight, through, rows } = await throughBothWays(ctx.stack, ctx.direct, async (url, key) => {
      const r = await generateText({ model: model(url, key), ...ASK });
      return { text: r.text, finishReason: r.finishReason, usage: r.usage };
    });
    expect(through).toEqual(straight);
    expect(through.text).toMatch(/^Emulated reply to: Which gateway carries this call\?/);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ stream: false, status: 200, key_id: ctx.stack.keyId });
    expect(through.usage).toMatchObject({
      inputTokens: rows[0]!.input_tokens,
      outputTokens: rows[0]!.output_tokens,
    });
  });

  it('streamText: same request bytes, same text, exact usage', async () => {
    const { straight, through, rows } = await throughBothWays(ctx.stack, ctx.direct, async (url, key) => {
      const s = streamText({ model: model(url, key), ...ASK });
      let text = '';
      for await (const delta of s.textStream) text += delta;
      return { text, finishReason: await s.finishReason, usage: await s.usage };
    });
    expect(through).toEqual(straight);
    expect(through.text).toMatch(/^Emulated reply to: /);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ stream: true, status: 200, partial: false });
    expect(through.usage).toMatchObject({
      inputTokens: rows[0]!.input_tokens,
      outputTokens: rows[0]!.output_tokens,
    });
  });
});
