import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { clientFor, groupRows, MODEL, startStack, summed, type Stack } from './helpers';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

const weather = {
  name: 'get_weather',
  description: 'Current weather for a city',
  input_schema: {
    type: 'object' as const,
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['city'],
  },
};
const convert = {
  name: 'convert',
  description: 'Converts a temperature',
  input_schema: z.object({ celsius: z.number() }),
};

describe('runToolLoop against the real gateway', () => {
  it('runs the round trips in one group whose total equals the sum of its calls as the gateway recorded them', async () => {
    const client = clientFor(stack);
    const cities: string[] = [];
    const result = await client.runToolLoop({
      model: MODEL,
      max_tokens: 512,
      messages: [{ role: 'user', content: 'What is the weather in Paris right now?' }],
      tools: [weather, convert],
      handlers: {
        get_weather: ({ city }) => (cities.push(String(city)), `18°C and clear in ${String(city)}`),
        convert: ({ celsius }) => celsius * 1.8 + 32,
      },
    });
    expect(result).toMatchObject({ status: 'completed', turns: 2, malformedToolCalls: 0 });
    expect(result.message.stop_reason).toBe('end_turn');
    expect(cities).toHaveLength(1);
    expect(result.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);

    const rows = await groupRows(stack, result.groupId);
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.status === 200 && r.key_id === stack.keyId)).toBe(true);
    expect(rows.map((r) => r.upstream_message_id)).toEqual(client.records.map((r) => r.messageId));
    expect(result.usage).toMatchObject(summed(rows));
    expect(client.usage.group(result.groupId)).toEqual(result.usage);
  });

  it('malformed tool input goes back as is_error, is counted, and the loop recovers', async () => {
    const client = clientFor(stack);
    const result = await client.runToolLoop({
      model: MODEL,
      messages: [{ role: 'user', content: 'Weather in Lyon?' }],
      tools: [weather],
      handlers: { get_weather: () => 'never called with bad input' },
      requestOptions: { headers: { 'x-emulator-scenario': 'malformed_tool_input' } },
      groupId: 'tool-loop-malformed',
    });
    expect(result).toMatchObject({
      status: 'completed',
      malformedToolCalls: 1,
      groupId: 'tool-loop-malformed',
    });
    const back = result.transcript[2]!.content as Array<{
      type: string;
      is_error?: boolean;
      content?: string;
    }>;
    expect(back[0]).toMatchObject({
      type: 'tool_result',
      is_error: true,
      content: expect.stringMatching(/Invalid input for tool "get_weather"[\s\S]*city/),
    });
    expect(result.usage.errors.malformed_tool_call).toBe(1);
    expect(result.usage).toMatchObject(summed(await groupRows(stack, 'tool-loop-malformed')));
  });
});
