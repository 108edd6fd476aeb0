import { describe, expect, it } from 'vitest';
import { chooseTool, malformedToolInput, toolInput, valueForSchema } from './tools';

const weather = {
  name: 'get_weather',
  input_schema: {
    type: 'object',
    properties: {
      location: { type: 'string' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      days: { type: 'integer', minimum: 3, maximum: 10 },
      detailed: { type: 'boolean' },
      optional_note: { type: 'string' },
    },
    required: ['location', 'unit', 'days', 'detailed'],
  },
};

describe('schema-driven tool input', () => {
  it('fills every required property with a plausible value, and only those', () => {
    expect(toolInput(weather)).toEqual({
      location: 'Paris, France',
      unit: 'celsius',
      days: 3,
      detailed: true,
    });
  });

  it('handles nested objects, arrays, formats, consts, unions and nullable types', () => {
    const schema = {
      type: 'object',
      required: ['when', 'tags', 'owner', 'kind', 'maybe', 'ratio', 'either'],
      properties: {
        when: { type: 'string', format: 'date-time' },
        tags: { type: 'array', items: { type: 'string' }, minItems: 2 },
        owner: { type: 'object', required: ['email'], properties: { email: { type: 'string' } } },
        kind: { const: 'fixed' },
        maybe: { type: ['null', 'number'], maximum: 10 },
        ratio: { type: 'number', exclusiveMaximum: 1 },
        either: { anyOf: [{ type: 'null' }, { type: 'integer' }] },
      },
    };
    expect(valueForSchema(schema)).toEqual({
      when: '2025-01-15T12:00:00Z',
      tags: ['example tags', 'example tags'],
      owner: { email: 'ada@example.com' },
      kind: 'fixed',
      maybe: 10,
      ratio: 0,
      either: 1,
    });
  });

  it('gives an empty object for a tool without required properties', () => {
    expect(toolInput({ name: 'ping', input_schema: { type: 'object', properties: {} } })).toEqual({});
  });

  it('malformed input drops the first required property', () => {
    const input = malformedToolInput(weather);
    expect(input).not.toHaveProperty('location');
    expect(input).toHaveProperty('unit');
  });

  it('malformed input with nothing required puts a wrong type in the first property', () => {
    const tool = { name: 't', input_schema: { type: 'object', properties: { count: { type: 'integer' } } } };
    expect(malformedToolInput(tool)).toEqual({ count: 'not-the-right-type' });
  });
});

describe('which tool a reply calls', () => {
  const tool = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    input_schema: { type: 'object' },
    ...extra,
  });
  const claudeCode = ['Agent', 'Bash', 'Edit', 'ListAgents', 'Read', 'ToolSearch', 'Write'].map((n) =>
    tool(n),
  );

  it('the first custom tool whose name words the user said, as a model would', () => {
    expect(chooseTool([tool('get_weather')], undefined, 'Weather in Paris?')?.name).toBe('get_weather');
    expect(chooseTool(claudeCode, { type: 'auto' }, 'please read the file')?.name).toBe('Read');
    expect(chooseTool(claudeCode, undefined, 'what agents are listed?')?.name).toBe('Agent');
  });

  it('none for a prompt about none of them, such as Claude Code\'s "hi"', () => {
    expect(chooseTool(claudeCode, undefined, 'hi')).toBeUndefined();
    expect(chooseTool([tool('get_weather')], undefined, 'Tell me a joke')).toBeUndefined();
  });

  it('tool_choice any takes the first callable tool when none is named; tool takes the named one', () => {
    expect(chooseTool(claudeCode, { type: 'any' }, 'hi')?.name).toBe('Agent');
    expect(chooseTool(claudeCode, { type: 'tool', name: 'Write' }, 'hi')?.name).toBe('Write');
  });

  it('never a server tool, a tool type it does not know, or a deferred tool', () => {
    const tools = [
      { type: 'web_search_20250305', name: 'web_search' },
      { type: 'quantum_20270101', name: 'quantum' },
      tool('lookup', { defer_loading: true }),
    ];
    expect(chooseTool(tools, undefined, 'web search quantum lookup')).toBeUndefined();
    expect(chooseTool(tools, { type: 'any' }, 'web search quantum lookup')).toBeUndefined();
  });
});

describe('chooseTool and automated notices', () => {
  it('does not call a tool named only inside a <system-reminder> (a background-task notification)', () => {
    const tools = [{ name: 'Agent', input_schema: { type: 'object' } }];
    expect(
      chooseTool(tools, undefined, '<system-reminder>Agent "x" finished</system-reminder>'),
    ).toBeUndefined();
    expect(chooseTool(tools, undefined, 'Start an agent <system-reminder>note</system-reminder>')?.name).toBe(
      'Agent',
    );
  });
});
