import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { prepareTools } from './tool-schema';

const weather = {
  name: 'get_weather',
  description: 'Weather',
  input_schema: {
    type: 'object' as const,
    properties: { city: { type: 'string', minLength: 2 } },
    required: ['city'],
  },
};

describe('prepareTools', () => {
  it('sends a zod schema as JSON Schema and checks inputs with it (defaults applied)', () => {
    const schema = z.object({ a: z.number().describe('first'), b: z.number().default(1) });
    const { params, byName } = prepareTools(
      [{ name: 'add', description: 'Adds', input_schema: schema }],
      () => {},
    );
    expect(params[0]).toEqual({
      name: 'add',
      description: 'Adds',
      input_schema: {
        type: 'object',
        properties: { a: { type: 'number', description: 'first' }, b: { type: 'number', default: 1 } },
        required: ['a'],
      },
    });
    const add = byName.get('add')!;
    expect(add.custom).toBe(true);
    expect(add.validate!({ a: 2 })).toEqual({ ok: true, value: { a: 2, b: 1 } });
    const bad = add.validate!({ a: 'two' });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.message).toMatch(/expected number, received string[\s\S]*at a/);
  });

  it('checks inputs against a JSON Schema, and hands over the input as written', () => {
    const { params, byName } = prepareTools([weather], () => {});
    expect(params[0]).toBe(weather);
    const check = byName.get('get_weather')!.validate!;
    const input = { city: 'Paris', extra: true };
    expect(check(input)).toEqual({ ok: true, value: input });
    expect(check({})).toMatchObject({ ok: false });
    expect(check({ city: 'P' })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/>=2 characters/),
    });
  });

  it('passes server tools through, unchecked and not needing a handler', () => {
    const search = { type: 'web_search_20250305' as const, name: 'web_search' as const };
    const { params, byName } = prepareTools([search], () => {});
    expect(params).toEqual([search]);
    expect(byName.get('web_search')).toEqual({ name: 'web_search', validate: null, custom: false });
  });

  it('a JSON Schema zod cannot read is sent as is, with a warning, and not checked', () => {
    const warn = vi.fn();
    const odd = {
      name: 'odd',
      input_schema: { type: 'object' as const, properties: { x: { $ref: '#/$defs/missing' } } },
    };
    const { byName } = prepareTools([odd], warn);
    expect(byName.get('odd')!.validate).toBeNull();
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/tool "odd".*unchecked/));
  });

  it('refuses duplicate names and zod schemas that are not objects', () => {
    expect(() => prepareTools([weather, weather], () => {})).toThrow(
      expect.objectContaining({ code: 'duplicate_tool' }),
    );
    expect(() => prepareTools([{ name: 's', input_schema: z.string() }], () => {})).toThrow(
      expect.objectContaining({ code: 'invalid_tool_schema' }),
    );
  });
});
