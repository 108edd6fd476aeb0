import type { Json, MessagesBody } from './types';
import { isCustomTool } from './validate';

type Schema = Json;

/** Plausible strings for common property names, so generated inputs read like real ones. */
const NAMED_STRINGS: Record<string, string> = {
  location: 'Paris, France',
  city: 'Paris',
  country: 'France',
  query: 'emulated search query',
  q: 'emulated search query',
  name: 'Ada Lovelace',
  email: 'ada@example.com',
  url: 'https://example.com',
  path: '/tmp/example.txt',
  file_path: '/tmp/example.txt',
  command: 'echo hello',
  language: 'en',
  unit: 'celsius',
  id: 'item_123',
  date: '2025-01-15',
  timezone: 'Europe/Paris',
  text: 'Hello from the emulator.',
  message: 'Hello from the emulator.',
};

const FORMAT_STRINGS: Record<string, string> = {
  'date-time': '2025-01-15T12:00:00Z',
  date: '2025-01-15',
  time: '12:00:00',
  email: 'ada@example.com',
  uri: 'https://example.com',
  url: 'https://example.com',
  uuid: '123e4567-e89b-42d3-a456-426614174000',
};

/**
 * A value satisfying `schema` as far as common JSON Schema goes: every required property of
 * an object, enums and consts, numeric bounds, minItems. Deterministic for a given schema.
 */
export function valueForSchema(schema: unknown, name = 'value', depth = 0): unknown {
  if (typeof schema !== 'object' || schema === null || depth > 8) return 'example';
  const s = schema as Schema;
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if (s.default !== undefined) return s.default;
  const variants = (s.anyOf ?? s.oneOf ?? s.allOf) as unknown;
  if (Array.isArray(variants) && variants.length > 0) {
    const firstNonNull = variants.find((v) => (v as Schema)?.type !== 'null') ?? variants[0];
    return valueForSchema(firstNonNull, name, depth + 1);
  }
  switch (typeOf(s)) {
    case 'object':
      return objectFor(s, depth);
    case 'array': {
      const min = typeof s.minItems === 'number' ? s.minItems : 1;
      return Array.from({ length: Math.max(1, min) }, () => valueForSchema(s.items, name, depth + 1));
    }
    case 'string':
      return stringFor(s, name);
    case 'integer':
      return Math.ceil(numberFor(s, 1));
    case 'number':
      return numberFor(s, 42.5);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return s.properties ? objectFor(s, depth) : stringFor(s, name);
  }
}

/**
 * The tool a reply calls, as a model would: the one `tool_choice` names; else the first custom
 * tool whose name shares a word with the user's last text (`get_weather` for "Weather in
 * Paris?"; none for Claude Code's "hi" among its dozen tools); else, when `tool_choice` is
 * `any`, the first custom tool. Server tools and tools of types the emulator does not know are
 * never called, and a deferred tool (`defer_loading`) is not loaded yet, so not callable.
 */
export function chooseTool(
  tools: Json[],
  choice: MessagesBody['tool_choice'],
  text: string,
): Json | undefined {
  // validateMessages made sure a forced tool exists.
  if (choice?.type === 'tool') return tools.find((t) => t.name === choice.name);
  const callable = tools.filter((t) => isCustomTool(t) && t.defer_loading !== true);
  // Automated notices (Claude Code's background-task notifications) are not the user asking for a tool.
  const said = text
    .replace(/<system-reminder>[\s\S]*?(<\/system-reminder>|$)/g, ' ')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u);
  const relevant = callable.find((t) =>
    nameWords(String(t.name ?? '')).some((w) => said.some((s) => s.startsWith(w))),
  );
  return relevant ?? (choice?.type === 'any' ? callable[0] : undefined);
}

/** `get_weather` → get, weather; `ListAgents` → list, agents (words of three letters or more). */
function nameWords(name: string): string[] {
  return name
    .split(/[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])/)
    .map((w) => w.toLowerCase())
    .filter((w) => w.length >= 3);
}

/** The input of a tool_use block for `tool`: every required property, plausibly typed. */
export function toolInput(tool: Json): Json {
  const input = valueForSchema(tool.input_schema ?? { type: 'object' }, String(tool.name ?? 'tool'));
  return typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as Json) : {};
}

/**
 * The input a model gets wrong (`malformed_tool_input`): the first required property is left
 * out; with nothing required, the first property gets a value of the wrong type.
 */
export function malformedToolInput(tool: Json): Json {
  const schema = (tool.input_schema ?? {}) as Schema;
  const input = { ...toolInput(tool) };
  const required = Array.isArray(schema.required) ? (schema.required as unknown[]) : [];
  const firstRequired = required.find((key): key is string => typeof key === 'string');
  if (firstRequired !== undefined) {
    delete input[firstRequired];
    return input;
  }
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const first = Object.keys(properties)[0];
  if (first === undefined) return { __emulator_malformed__: true };
  input[first] = typeOf(properties[first]!) === 'string' ? 12345 : 'not-the-right-type';
  return input;
}

function objectFor(s: Schema, depth: number): Json {
  const properties = (s.properties ?? {}) as Record<string, Schema>;
  const required = Array.isArray(s.required) ? s.required : [];
  const out: Json = {};
  for (const key of required) {
    if (typeof key === 'string') out[key] = valueForSchema(properties[key] ?? {}, key, depth + 1);
  }
  return out;
}

function typeOf(s: Schema): string | undefined {
  if (typeof s.type === 'string') return s.type;
  if (Array.isArray(s.type)) return s.type.find((t) => t !== 'null') as string | undefined;
  return undefined;
}

function stringFor(s: Schema, name: string): string {
  const format = typeof s.format === 'string' ? FORMAT_STRINGS[s.format] : undefined;
  let value = format ?? NAMED_STRINGS[name] ?? `example ${name}`;
  const min = typeof s.minLength === 'number' ? s.minLength : 0;
  const max = typeof s.maxLength === 'number' ? s.maxLength : Infinity;
  while (value.length < min) value += 'x';
  return value.length > max ? value.slice(0, Math.max(max, 0)) : value;
}

function numberFor(s: Schema, fallback: number): number {
  const min =
    typeof s.minimum === 'number'
      ? s.minimum
      : typeof s.exclusiveMinimum === 'number'
        ? s.exclusiveMinimum + 1
        : undefined;
  const max =
    typeof s.maximum === 'number'
      ? s.maximum
      : typeof s.exclusiveMaximum === 'number'
        ? s.exclusiveMaximum - 1
        : undefined;
  if (min !== undefined && fallback < min) return min;
  if (max !== undefined && fallback > max) return max;
  return fallback;
}
