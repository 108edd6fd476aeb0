/** Compile-time checks of runToolLoop's handler types. Never run, only type-checked. */
import { z } from 'zod';
import type Keygate from '../src/index';

declare const client: Keygate;
const declaredApart = { name: 'add', input_schema: z.object({ a: z.number() }) };

export async function handlerTypes(): Promise<void> {
  // Inline tools: each handler's input is inferred from its tool's zod schema; JSON Schema inputs are records.
  await client.runToolLoop({
    model: 'claude-opus-4-5',
    messages: [],
    tools: [
      { name: 'add', description: 'Adds', input_schema: z.object({ a: z.number(), b: z.number() }) },
      { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
      { type: 'web_search_20250305', name: 'web_search' },
    ],
    handlers: { add: ({ a, b }) => a + b, get_weather: (input) => String(input.city) },
  });
  await client.runToolLoop({
    model: 'm',
    messages: [],
    tools: [{ name: 'add', input_schema: z.object({ a: z.number() }) }],
    // @ts-expect-error a custom tool without a handler
    handlers: {},
  });
  await client.runToolLoop({
    model: 'm',
    messages: [],
    tools: [{ name: 'add', input_schema: z.object({ a: z.number() }) }],
    // @ts-expect-error the schema says a is a number
    handlers: { add: ({ a }: { a: string }) => a },
  });
  // A tool declared apart has a plain string name: handlers match by name at run time.
  await client.runToolLoop({
    model: 'm',
    messages: [],
    tools: [declaredApart],
    handlers: { add: ({ a }: { a: number }) => a + 1 },
  });
}
