import type Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { fakeFetch, json, message, toolUse, unitClient } from './test-support';

const MODEL = 'claude-opus-4-5';
const weather = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};
const add = {
  name: 'add',
  description: 'Adds two numbers',
  input_schema: z.object({ a: z.number(), b: z.number() }),
};
const fail = { name: 'fail', description: 'Always fails', input_schema: z.object({}) };

function scripted(turns: Anthropic.ContentBlock[][] | ((i: number) => Anthropic.ContentBlock[])) {
  return fakeFetch((_req, i) =>
    json(
      message(
        typeof turns === 'function'
          ? turns(i)
          : (turns[i] ?? ([{ type: 'text', text: 'done' }] as Anthropic.ContentBlock[])),
      ),
    ),
  );
}

describe('runToolLoop', () => {
  it('runs tools until the model stops, feeding malformed input, unknown tools and handler errors back as is_error', async () => {
    const { fetch, sent } = scripted([
      [
        { type: 'text', text: 'Let me check.' } as Anthropic.ContentBlock,
        toolUse('add', { a: '2' }, 't1'),
        toolUse('get_weather', { city: 'Paris' }, 't2'),
      ],
      [toolUse('add', { a: 2, b: 40 }, 't3'), toolUse('teleport', {}, 't4'), toolUse('fail', {}, 't5')],
      [{ type: 'text', text: 'It is 18°C; 2 + 40 = 42.' } as Anthropic.ContentBlock],
    ]);
    const client = unitClient(fetch);
    const onTurn = vi.fn();
    const result = await client.runToolLoop({
      model: MODEL,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Weather in Paris, and 2 + 40?' }],
      tools: [weather, add, fail],
      handlers: {
        get_weather: async ({ city }) => ({ city, celsius: 18 }),
        add: ({ a, b }) => a + b,
        fail: () => {
          throw new RangeError('sensor offline');
        },
      },
      onTurn,
    });

    expect(result).toMatchObject({ status: 'completed', turns: 3, malformedToolCalls: 2 });
    expect(result.message.content).toEqual([{ type: 'text', text: 'It is 18°C; 2 + 40 = 42.' }]);
    expect(result.toolCalls.map((c) => [c.toolUseId, c.outcome])).toEqual([
      ['t1', 'malformed'],
      ['t2', 'ok'],
      ['t3', 'ok'],
      ['t4', 'malformed'],
      ['t5', 'error'],
    ]);
    expect(result.transcript).toHaveLength(6);
    expect(onTurn).toHaveBeenCalledTimes(3);

    const firstResults = sent[1]!.body!.messages.at(-1).content;
    expect(firstResults[0]).toMatchObject({
      type: 'tool_result',
      tool_use_id: 't1',
      is_error: true,
      content: expect.stringMatching(/Invalid input for tool "add"[\s\S]*expected number/),
    });
    expect(firstResults[1]).toEqual({
      type: 'tool_result',
      tool_use_id: 't2',
      content: '{"city":"Paris","celsius":18}',
    });
    const secondResults = sent[2]!.body!.messages.at(-1).content;
    expect(secondResults).toEqual([
      { type: 'tool_result', tool_use_id: 't3', content: '42' },
      {
        type: 'tool_result',
        tool_use_id: 't4',
        is_error: true,
        content: expect.stringMatching(/no tool named "teleport".*get_weather, add, fail/),
      },
      { type: 'tool_result', tool_use_id: 't5', is_error: true, content: 'RangeError: sensor offline' },
    ]);

    expect(sent.every((r) => r.headers.get('keygate-group-id') === result.groupId)).toBe(true);
    expect(sent[0]!.body).toMatchObject({ model: MODEL, max_tokens: 4096, system: 'Be brief.' });
    expect(sent[0]!.body!.tools[1].input_schema).toMatchObject({ type: 'object', required: ['a', 'b'] });
    expect(result.usage).toMatchObject({ calls: 3, input_tokens: 360, errors: { malformed_tool_call: 2 } });
    expect(client.usage.total().errors.malformed_tool_call).toBe(2);
  });

  it('stops at maxTurns without running the tools of the last turn', async () => {
    const { fetch, sent } = scripted(() => [toolUse('add', { a: 1, b: 1 })]);
    const handler = vi.fn(({ a, b }: { a: number; b: number }) => a + b);
    const result = await unitClient(fetch).runToolLoop({
      model: MODEL,
      messages: [{ role: 'user', content: 'loop' }],
      tools: [add],
      handlers: { add: handler },
      maxTurns: 2,
    });
    expect(result).toMatchObject({ status: 'max_turns', turns: 2 });
    expect(sent).toHaveLength(2);
    expect(handler).toHaveBeenCalledTimes(1);
    expect(result.transcript.at(-1)).toMatchObject({ role: 'assistant' });
  });

  it('continues a pause_turn without tool results, and passes content blocks through', async () => {
    const { fetch, sent } = fakeFetch((_r, i) =>
      json(
        i === 0
          ? message('searching…', { stop_reason: 'pause_turn' })
          : i === 1
            ? message([toolUse('shot', {}, 's1')])
            : message('done'),
      ),
    );
    const shot = { name: 'shot', input_schema: { type: 'object' as const } };
    const blocks = [{ type: 'text', text: 'a screenshot' }];
    const result = await unitClient(fetch).runToolLoop({
      model: MODEL,
      messages: [{ role: 'user', content: 'go' }],
      tools: [shot],
      handlers: { shot: () => blocks },
    });
    expect(result.turns).toBe(3);
    expect(sent[1]!.body!.messages.at(-1)).toMatchObject({ role: 'assistant' });
    expect(sent[2]!.body!.messages.at(-1).content).toEqual([
      { type: 'tool_result', tool_use_id: 's1', content: blocks },
    ]);
  });

  it("runs in the client's group when it has one, or in the group asked for", async () => {
    const { fetch, sent } = scripted([]);
    const client = unitClient(fetch);
    await client
      .group('mine')
      .runToolLoop({ model: MODEL, messages: [{ role: 'user', content: 'x' }], tools: [], handlers: {} });
    const named = await client.runToolLoop({
      model: MODEL,
      messages: [{ role: 'user', content: 'x' }],
      tools: [],
      handlers: {},
      groupId: 'asked',
    });
    expect(sent.map((r) => r.headers.get('keygate-group-id'))).toEqual(['mine', 'asked']);
    expect(named.groupId).toBe('asked');
  });

  it('refuses to start with a custom tool that has no handler, or a bad maxTurns', async () => {
    const { fetch, sent } = scripted([]);
    const client = unitClient(fetch);
    const base = { model: MODEL, messages: [{ role: 'user' as const, content: 'x' }], tools: [weather] };
    await expect(client.runToolLoop({ ...base, handlers: {} as never })).rejects.toMatchObject({
      code: 'missing_handler',
    });
    await expect(
      client.runToolLoop({ ...base, handlers: { get_weather: () => 'x' }, maxTurns: 0 }),
    ).rejects.toMatchObject({ code: 'invalid_option' });
    expect(sent).toHaveLength(0);
  });
});
