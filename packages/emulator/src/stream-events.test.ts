import { describe, expect, it } from 'vitest';
import { planReply } from './reply';
import { readScenario } from './scenarios';
import { buildEvents } from './stream-events';
import type { MessagesBody } from './types';

const NO_CACHE = { input: 0, creation5m: 0, creation1h: 0, read: 0 };
const weather = {
  name: 'get_weather',
  input_schema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
};

describe('tokens carried by each delta', () => {
  it.each([
    ['text', {}, {}],
    [
      'thinking, text and a tool call',
      { tools: [weather], thinking: { type: 'enabled', budget_tokens: 1024 } },
      {},
    ],
    ['paced text', {}, { 'x-emulator-scenario': 'paced', 'x-emulator-deltas': '100' }],
  ])('%s: the deltas add up to the output tokens billed for the whole answer', (_name, extra, headers) => {
    const body: MessagesBody = {
      model: 'm',
      max_tokens: 2_000,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      ...extra,
    };
    const scenario = readScenario(headers, undefined);
    const plan = planReply(body, scenario, NO_CACHE);
    const deltas = buildEvents(plan, scenario).filter((e) => e.kind === 'content_block_delta');
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.every((e) => Number.isInteger(e.tokens) && e.tokens! >= 0)).toBe(true);
    expect(deltas.reduce((n, e) => n + e.tokens!, 0)).toBe(plan.usage.output_tokens);
  });
});
