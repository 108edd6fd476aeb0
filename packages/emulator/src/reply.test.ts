import { describe, expect, it } from 'vitest';
import { blockJson, planReply, type Plan } from './reply';
import { readScenario } from './scenarios';
import type { Json, MessagesBody } from './types';

const NO_CACHE = { input: 0, creation5m: 0, creation1h: 0, read: 0 };
const weather = {
  name: 'get_weather',
  input_schema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
};

function plan(extra: Partial<MessagesBody> = {}, headers: Record<string, string> = {}): Plan {
  const body: MessagesBody = {
    model: 'm',
    max_tokens: 1_000,
    messages: [{ role: 'user', content: 'What is the weather in Paris today?' }],
    ...extra,
  };
  return planReply(body, readScenario(headers, undefined), NO_CACHE);
}
const content = (p: Plan): Json[] => p.blocks.map(blockJson);

describe('reply plan', () => {
  it('answers with ~24 words that start from the question; output_tokens = words', () => {
    const p = plan();
    const text = content(p)[0]!.text as string;
    expect(text.startsWith('Emulated reply to: What is the weather in Paris')).toBe(true);
    expect(text.split(' ')).toHaveLength(24);
    expect(p.usage.output_tokens).toBe(24);
    expect(p.stopReason).toBe('end_turn');
  });

  it('honours x-emulator-output-tokens and max_tokens', () => {
    expect(plan({}, { 'x-emulator-output-tokens': '100' }).usage.output_tokens).toBe(100);
    const cut = plan({ max_tokens: 5 });
    expect(cut.usage.output_tokens).toBe(5);
    expect(cut.stopReason).toBe('max_tokens');
  });

  it('stops at the earliest stop sequence and counts the words kept', () => {
    const p = plan({ stop_sequences: ['Paris', 'weather'] });
    expect(content(p)[0]!.text).toBe('Emulated reply to: What is the ');
    expect(p.stopReason).toBe('stop_sequence');
    expect(p.stopSequence).toBe('weather');
    expect(p.usage.output_tokens).toBe(6);
  });

  it('calls the first custom tool after a short text, with schema-valid input', () => {
    const p = plan({
      tools: [{ type: 'web_search_20250305', name: 'web_search' }, weather],
      tool_choice: { type: 'any' },
    });
    expect(content(p).map((b) => b.type)).toEqual(['tool_use']);
    const auto = plan({ tools: [weather] });
    const blocks = content(auto);
    expect(blocks.map((b) => b.type)).toEqual(['text', 'tool_use']);
    expect(blocks[1]).toMatchObject({ name: 'get_weather', input: { location: 'Paris, France' } });
    expect(blocks[1]!.id).toMatch(/^toolu_01[0-9A-Za-z]{22}$/);
    expect(auto.stopReason).toBe('tool_use');
    expect(auto.usage.output_tokens).toBe(
      5 + Math.ceil(JSON.stringify({ location: 'Paris, France' }).length / 4),
    );
  });

  it('answers tool results with text and end_turn; tool_choice none never calls', () => {
    const messages: MessagesBody['messages'] = [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny, 21 C' }] },
    ];
    const p = plan({ tools: [weather], messages });
    expect(content(p).map((b) => b.type)).toEqual(['text']);
    expect(content(p)[0]!.text).toMatch(/^Emulated reply to: Sunny, 21 C/);
    expect(p.stopReason).toBe('end_turn');
    expect(plan({ tools: [weather], tool_choice: { type: 'none' } }).stopReason).toBe('end_turn');
  });

  it('thinks first when asked, and the thinking counts as output', () => {
    const p = plan({ thinking: { type: 'enabled', budget_tokens: 2_000 } });
    const blocks = content(p);
    expect(blocks.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect(blocks[0]!.signature).toEqual(expect.any(String));
    expect(p.usage.output_tokens).toBe(16 + 24);
    expect(content(plan({}, { 'x-emulator-scenario': 'thinking' }))[0]!.type).toBe('thinking');
  });

  it('runs a web search when a web_search server tool is offered', () => {
    const p = plan({ tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }] });
    expect(content(p).map((b) => b.type)).toEqual(['server_tool_use', 'web_search_tool_result', 'text']);
    expect(p.usage.server_tool_use.web_search_requests).toBe(1);
  });

  it('malformed_tool_input leaves out a required property', () => {
    const p = plan({ tools: [weather] }, { 'x-emulator-scenario': 'malformed_tool_input' });
    expect(content(p)[1]!.input).toEqual({});
  });

  it("replies to the user's last text block, after the reminders a client puts first", () => {
    const messages: MessagesBody['messages'] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: '<system-reminder>Be nice</system-reminder>' },
          { type: 'text', text: 'hi there' },
        ],
      },
    ];
    const p = plan({ messages, tools: [weather, { name: 'Bash', input_schema: { type: 'object' } }] });
    expect(content(p).map((b) => b.type)).toEqual(['text']);
    expect(content(p)[0]!.text).toMatch(/^Emulated reply to: hi there the emulator/);
  });
});
