import type Anthropic from '@anthropic-ai/sdk';
import type { z } from 'zod';
import type { Keygate } from './client';
import { KeygateError } from './errors';
import { groupClient } from './group';
import { prepareTools, type PreparedTools, type ToolSpec } from './tool-schema';
import type { UsageSummary } from './usage-types';

export type { ToolSpec, ZodToolSpec } from './tool-schema';

export interface ToolCallContext {
  toolUseId: string;
  /** 1-based model turn that asked for the call. */
  turn: number;
  /** The group client the loop runs on, for tools that call the model themselves. */
  client: Keygate;
  signal: AbortSignal | undefined;
}

/**
 * Runs one tool call. The result goes back as the `tool_result` content: a string as is,
 * an array of content blocks as is, anything else as JSON. A throw goes back with `is_error`.
 */
export type ToolHandler<I> = (input: I, context: ToolCallContext) => unknown;

type NameOf<T> = T extends { name: infer N extends string } ? N : never;
type InputOf<T> = T extends { input_schema: infer S }
  ? S extends z.ZodType
    ? z.output<S>
    : Record<string, unknown>
  : Record<string, unknown>;

type ByName<T extends readonly ToolSpec[]> = {
  [K in T[number] as K extends { input_schema: unknown } ? NameOf<K> : never]: ToolHandler<InputOf<K>>;
} & {
  [K in T[number] as K extends { input_schema: unknown } ? never : NameOf<K>]?: ToolHandler<
    Record<string, unknown>
  >;
};

type HasWideName<T extends readonly ToolSpec[]> = T[number] extends infer K
  ? K extends ToolSpec
    ? string extends NameOf<K>
      ? true
      : never
    : never
  : never;

/**
 * A handler for every custom tool (those with an input schema), typed from its zod schema;
 * optional for the others. When a tool's name is only a `string` to the compiler (a tool
 * declared without `as const`), handlers are matched by name at run time and their input is
 * whatever the handler declares.
 */
export type ToolHandlers<T extends readonly ToolSpec[]> = [HasWideName<T>] extends [never]
  ? ByName<T>
  : // The input type is then the handler's own declaration, hence `any` here.
    Record<string, ToolHandler<any>>;

type CreateParams = Omit<
  Anthropic.MessageCreateParamsNonStreaming,
  'messages' | 'tools' | 'stream' | 'max_tokens'
>;

export interface ToolLoopOptions<T extends readonly ToolSpec[]> extends CreateParams {
  messages: Anthropic.MessageParam[];
  tools: T;
  handlers: NoInfer<ToolHandlers<T>>;
  /** Model calls at most; default 10. */
  maxTurns?: number;
  /** Default 4096. */
  max_tokens?: number;
  /** The request group; default: the client's group, else a new one. */
  groupId?: string;
  /** Per-request options of the official client (headers, timeout, signal, …) for every call. */
  requestOptions?: Anthropic.RequestOptions;
  /** Called after each model turn, before its tools run. */
  onTurn?: (message: Anthropic.Message, turn: number) => void | Promise<void>;
}

export interface ToolCallRecord {
  turn: number;
  toolUseId: string;
  name: string;
  input: unknown;
  /** `malformed`: unknown tool or input that fails the schema; `error`: the handler threw. */
  outcome: 'ok' | 'malformed' | 'error';
  /** What was sent back as the tool_result content. */
  result: Anthropic.ToolResultBlockParam['content'];
}

export interface ToolLoopResult {
  /** The model's last message. */
  message: Anthropic.Message;
  /** The conversation: the messages given, then every assistant turn and tool_result message. */
  transcript: Anthropic.MessageParam[];
  /** `max_turns`: the model still wanted tools when the turns ran out (its last tool calls were not run). */
  status: 'completed' | 'max_turns';
  turns: number;
  toolCalls: ToolCallRecord[];
  malformedToolCalls: number;
  groupId: string;
  /** The group's totals: every call of the loop (retries included) and its malformed tool calls. */
  usage: UsageSummary;
}

/**
 * Runs model ↔ tool round trips in one request group until the model stops asking for tools
 * (or `maxTurns` model calls). Each tool input is checked against its schema (zod or JSON
 * Schema); malformed inputs, unknown tools and handler errors go back to the model as
 * `tool_result` blocks with `is_error`, so it can correct itself, and malformed calls are
 * counted in the usage (`errors.malformed_tool_call`).
 *
 * @example
 * import Keygate, { runToolLoop, z } from '@keygate/sdk';
 * const result = await runToolLoop(new Keygate(), {
 *   model: 'claude-sonnet-4-6',
 *   messages: [{ role: 'user', content: 'Add 2 and 40, then say the result.' }],
 *   tools: [{ name: 'add', description: 'Adds two numbers', input_schema: z.object({ a: z.number(), b: z.number() }) }],
 *   handlers: { add: ({ a, b }) => a + b },
 *   maxTurns: 5,
 * });
 * result.message.content;   // the final answer
 * result.usage.calls;       // model calls made by the loop
 */
export async function runToolLoop<const T extends readonly ToolSpec[]>(
  client: Keygate,
  options: ToolLoopOptions<T>,
): Promise<ToolLoopResult> {
  const {
    messages,
    tools,
    handlers,
    maxTurns = 10,
    max_tokens = 4096,
    groupId,
    requestOptions,
    onTurn,
    ...params
  } = options;
  if (!Number.isSafeInteger(maxTurns) || maxTurns < 1)
    throw new KeygateError('invalid_option', `maxTurns must be a positive integer, got ${maxTurns}`);
  const prepared = prepareTools(tools, (message) => client.logger.warn(message));
  const run = handlers as Record<string, ToolHandler<unknown> | undefined>;
  for (const tool of prepared.byName.values()) {
    if (tool.custom && typeof run[tool.name] !== 'function')
      throw new KeygateError(
        'missing_handler',
        `No handler for tool "${tool.name}": add it to \`handlers\`.`,
      );
  }
  const { group, groupId: id } = groupClient(client, groupId);
  const transcript: Anthropic.MessageParam[] = [...messages];
  const toolCalls: ToolCallRecord[] = [];
  const finish = (
    message: Anthropic.Message,
    status: ToolLoopResult['status'],
    turns: number,
  ): ToolLoopResult => ({
    message,
    transcript,
    status,
    turns,
    toolCalls,
    malformedToolCalls: toolCalls.filter((c) => c.outcome === 'malformed').length,
    groupId: id,
    usage: group.usage.group(id),
  });

  for (let turn = 1; ; turn++) {
    const message = await group.messages.create(
      { ...params, max_tokens, messages: [...transcript], tools: prepared.params },
      requestOptions,
    );
    transcript.push({ role: 'assistant', content: message.content });
    await onTurn?.(message, turn);
    const uses = message.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    const wantsMore =
      message.stop_reason === 'pause_turn' || (message.stop_reason === 'tool_use' && uses.length > 0);
    if (!wantsMore) return finish(message, 'completed', turn);
    if (turn >= maxTurns) return finish(message, 'max_turns', turn);
    if (message.stop_reason === 'pause_turn') continue;
    const context = { turn, client: group, signal: requestOptions?.signal ?? undefined };
    const calls = await Promise.all(
      uses.map((use) => callTool(use, prepared, run, { ...context, toolUseId: use.id })),
    );
    const malformed = calls.filter((c) => c.outcome === 'malformed').length;
    if (malformed > 0) group.usage.addMalformedToolCalls(id, malformed);
    toolCalls.push(...calls);
    transcript.push({
      role: 'user',
      content: calls.map((c) => ({
        type: 'tool_result',
        tool_use_id: c.toolUseId,
        ...(c.result === undefined ? {} : { content: c.result }),
        ...(c.outcome === 'ok' ? {} : { is_error: true }),
      })),
    });
  }
}

async function callTool(
  use: Anthropic.ToolUseBlock,
  prepared: PreparedTools,
  handlers: Record<string, ToolHandler<unknown> | undefined>,
  context: ToolCallContext,
): Promise<ToolCallRecord> {
  const record = (outcome: ToolCallRecord['outcome'], result: ToolCallRecord['result']): ToolCallRecord => ({
    turn: context.turn,
    toolUseId: use.id,
    name: use.name,
    input: use.input,
    outcome,
    result,
  });
  const tool = prepared.byName.get(use.name);
  const handler = handlers[use.name];
  if (!tool && !handler) {
    const known = [...prepared.byName.keys()].join(', ');
    return record('malformed', `There is no tool named "${use.name}". Available tools: ${known}.`);
  }
  let input = use.input;
  if (tool?.validate) {
    const checked = tool.validate(use.input);
    if (!checked.ok)
      return record(
        'malformed',
        `Invalid input for tool "${use.name}":\n${checked.message}\nCall the tool again with input that matches its schema.`,
      );
    input = checked.value;
  }
  if (!handler) return record('error', `Tool "${use.name}" is not available in this application.`);
  try {
    return record('ok', toResultContent(await handler(input, context)));
  } catch (error) {
    return record('error', error instanceof Error ? `${error.name}: ${error.message}` : String(error));
  }
}

const RESULT_BLOCKS = new Set(['text', 'image', 'document', 'search_result', 'tool_reference']);

function toResultContent(value: unknown): ToolCallRecord['result'] {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  const isBlocks =
    Array.isArray(value) &&
    value.length > 0 &&
    value.every(
      (b) => typeof b === 'object' && b !== null && RESULT_BLOCKS.has(String((b as { type?: unknown }).type)),
    );
  return isBlocks ? (value as Anthropic.ToolResultBlockParam['content']) : JSON.stringify(value);
}
