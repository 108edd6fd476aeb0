import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import { KeygateError } from './errors';

/** A custom tool whose input is described by a zod schema instead of JSON Schema. */
export interface ZodToolSpec<S extends z.ZodType = z.ZodType> extends Omit<Anthropic.Tool, 'input_schema'> {
  input_schema: S;
}

/** A tool as the official client takes it, or a custom tool with a zod schema. */
export type ToolSpec = Anthropic.ToolUnion | ZodToolSpec;

export type Validation = { ok: true; value: unknown } | { ok: false; message: string };

export interface PreparedTool {
  name: string;
  /** Checks a `tool_use` input; null when the tool has no schema to check against. */
  validate: ((input: unknown) => Validation) | null;
  /** The tool has an input schema (a custom tool): the app must run it. */
  custom: boolean;
}

export interface PreparedTools {
  params: Anthropic.ToolUnion[];
  byName: Map<string, PreparedTool>;
}

/**
 * Turns tool specs into what the API takes and what the loop checks inputs with: a zod schema
 * is sent as JSON Schema and validated as itself; a JSON Schema is validated through
 * `z.fromJSONSchema` (a schema it cannot read is sent unchanged and its inputs are not checked).
 */
export function prepareTools(specs: readonly ToolSpec[], warn: (message: string) => void): PreparedTools {
  const params: Anthropic.ToolUnion[] = [];
  const byName = new Map<string, PreparedTool>();
  for (const spec of specs) {
    // Toolsets (browser, computer) have no name of their own: their members' calls go to the handler of that name.
    if (!('name' in spec)) {
      params.push(spec);
      continue;
    }
    if (byName.has(spec.name))
      throw new KeygateError('duplicate_tool', `Two tools are named "${spec.name}".`);
    if (!('input_schema' in spec)) {
      params.push(spec);
      byName.set(spec.name, { name: spec.name, validate: null, custom: false });
      continue;
    }
    const schema: unknown = spec.input_schema;
    if (isZodSchema(schema)) {
      params.push({ ...spec, input_schema: jsonSchemaOf(spec.name, schema) });
      byName.set(spec.name, { name: spec.name, validate: (input) => check(schema, input), custom: true });
    } else {
      params.push(spec as Anthropic.Tool);
      byName.set(spec.name, {
        name: spec.name,
        validate: jsonSchemaValidator(spec.name, schema, warn),
        custom: true,
      });
    }
  }
  return { params, byName };
}

function isZodSchema(value: unknown): value is z.ZodType {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { safeParse?: unknown }).safeParse === 'function'
  );
}

function jsonSchemaOf(name: string, schema: z.ZodType): Anthropic.Tool.InputSchema {
  let json: Record<string, unknown>;
  try {
    json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  } catch (error) {
    throw new KeygateError(
      'invalid_tool_schema',
      `Tool "${name}": its zod schema cannot be turned into JSON Schema (${(error as Error).message}). Use a zod 4 schema.`,
    );
  }
  const { $schema: _dialect, ...rest } = json;
  if (rest.type !== 'object')
    throw new KeygateError(
      'invalid_tool_schema',
      `Tool "${name}": the input schema must describe an object, like z.object({ … }).`,
    );
  return rest as Anthropic.Tool.InputSchema;
}

function jsonSchemaValidator(
  name: string,
  schema: unknown,
  warn: (message: string) => void,
): PreparedTool['validate'] {
  let zod: z.ZodType;
  try {
    zod = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (error) {
    warn(
      `keygate: tool "${name}": its JSON Schema cannot be checked locally (${(error as Error).message}); inputs go to the handler unchecked.`,
    );
    return null;
  }
  // The handler gets the input as the model wrote it: the check only guards it.
  return (input) => {
    const result = check(zod, input);
    return result.ok ? { ok: true, value: input } : result;
  };
}

function check(schema: z.ZodType, input: unknown): Validation {
  const result = schema.safeParse(input);
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, message: z.prettifyError(result.error) };
}
