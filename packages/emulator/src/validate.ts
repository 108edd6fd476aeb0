import { modelData, unknownModel } from './models';
import { invalid } from './errors';
import type { Json, MessagesBody } from './types';

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Parses a request body; the provider answers bad JSON with a 400. */
export function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw invalid(`There was an issue with your request body: invalid JSON (${(err as Error).message}).`);
  }
}

/** Lets `role: "system"` messages into `messages` (Claude Code sends it with such messages). */
export const PER_TURN_CONTROL_BETA = 'per-turn-control-2026-07-01';

/** The `anthropic-beta` values of a request (comma-separated, possibly over several headers). */
export function betasOf(header: string | string[] | undefined): Set<string> {
  const values = Array.isArray(header) ? header.join(',') : (header ?? '');
  return new Set(
    values
      .split(',')
      .map((b) => b.trim())
      .filter((b) => b !== ''),
  );
}

/** The API version the provider assumed before 2026-10-21 was sent, and the one that made these rules. */
export const LEGACY_VERSION = '2023-06-01';
export const VERSION_2026_10_21 = '2026-10-21';

/** A request's `anthropic-version` (the first one, when sent twice). */
export function apiVersionOf(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value?.trim() || LEGACY_VERSION;
}

/**
 * Refuses only what the provider is known to refuse, in its wording; everything else (fields,
 * block types, tool types, values it does not know yet) is accepted and left alone, since the
 * provider's schema grows every few weeks and gateways forward bodies byte for byte.
 */
export function validateMessages(
  body: unknown,
  endpoint: 'messages' | 'count_tokens',
  betas: ReadonlySet<string> = new Set(),
  version: string = LEGACY_VERSION,
): MessagesBody {
  if (!isObject(body)) throw invalid('The request body must be a JSON object.');
  // ISO dates compare as strings: a version from 2026-10-21 on takes the stricter rules.
  if (version >= VERSION_2026_10_21) validate20261021(body);
  if (typeof body.model !== 'string' || body.model === '') throw invalid('model: Field required');
  if (endpoint === 'messages') {
    const max = body.max_tokens;
    if (max === undefined) throw invalid('max_tokens: Field required');
    if (typeof max !== 'number' || !Number.isInteger(max))
      throw invalid('max_tokens: Input should be a valid integer');
    if (max < 1) throw invalid('max_tokens: Input should be greater than or equal to 1');
  }
  if (body.stream !== undefined && typeof body.stream !== 'boolean')
    throw invalid('stream: Input should be a valid boolean');
  validateMessageList(body.messages, betas.has(PER_TURN_CONTROL_BETA));
  validateSystem(body.system);
  validateTools(body.tools, body.tool_choice);
  if (body.stop_sequences !== undefined) {
    if (!Array.isArray(body.stop_sequences) || !body.stop_sequences.every((s) => typeof s === 'string')) {
      throw invalid('stop_sequences: Input should be a valid list of strings');
    }
  }
  if (endpoint === 'messages') validateThinking(body);
  const known = modelData(body.model);
  if (!known) throw unknownModel(body.model);
  // platform.claude.com/docs/en/build-with-claude/data-residency (read 2026-11-25): models
  // released before Opus 4.6 refuse inference_geo with a 400.
  if (body.inference_geo !== undefined && body.inference_geo !== null && !known.inference_geo)
    throw invalid(`inference_geo: not supported on ${body.model}`);
  return body as MessagesBody;
}

function validateMessageList(messages: unknown, systemMessages: boolean): void {
  if (messages === undefined) throw invalid('messages: Field required');
  if (!Array.isArray(messages)) throw invalid('messages: Input should be a valid list');
  if (messages.length === 0) throw invalid('messages: at least one message is required');
  for (let i = 0; i < messages.length; i++) {
    const message: unknown = messages[i];
    if (!isObject(message)) throw invalid(`messages.${i}: Input should be a valid dictionary`);
    if (message.role === 'system') {
      if (!systemMessages) throw invalid(UNEXPECTED_SYSTEM_ROLE);
      validateSystemMessage(messages as Json[], i);
      continue;
    }
    if (message.role !== 'user' && message.role !== 'assistant') {
      throw invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    }
    const { content } = message;
    if (typeof content === 'string') continue;
    if (!Array.isArray(content))
      throw invalid(`messages.${i}.content: Input should be a valid string or a list of content blocks`);
    for (let j = 0; j < content.length; j++) {
      const block: unknown = content[j];
      if (!isObject(block) || typeof block.type !== 'string')
        throw invalid(`messages.${i}.content.${j}.type: Field required`);
      if (block.type === 'text' && typeof block.text !== 'string')
        throw invalid(`messages.${i}.content.${j}.text.text: Field required`);
    }
  }
}

// The provider's wording, seen in public bug reports of clients that sent role "system".
const UNEXPECTED_SYSTEM_ROLE =
  'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.';

/**
 * The provider's documented placement and content rules for a mid-conversation system message
 * (its exact wording for these is not public; the messages here say what the rule is).
 */
function validateSystemMessage(messages: Json[], i: number): void {
  const previous = messages[i - 1];
  const next = messages[i + 1];
  if (previous === undefined)
    throw invalid(
      `messages.0: a system message cannot be the first message; use the top-level \`system\` parameter for instructions that apply from the start.`,
    );
  if (previous.role === 'system' || next?.role === 'system')
    throw invalid(`messages.${i}: consecutive system messages are not allowed.`);
  if (previous.role !== 'user' && !endsInServerToolUse(previous)) {
    throw invalid(
      `messages.${i}: a system message must immediately follow a user message (or an assistant message that ends in a server tool use).`,
    );
  }
  if (next !== undefined && next.role !== 'assistant')
    throw invalid(
      `messages.${i}: a system message must be the last message or be followed by an assistant message.`,
    );
  const { content } = messages[i]!;
  if (typeof content === 'string') return;
  if (!Array.isArray(content))
    throw invalid(`messages.${i}.content: Input should be a valid string or a list of text blocks`);
  for (let j = 0; j < content.length; j++) {
    const block: unknown = content[j];
    if (!isObject(block) || block.type !== 'text' || typeof block.text !== 'string') {
      throw invalid(`messages.${i}.content.${j}: a system message supports text blocks only.`);
    }
  }
}

function endsInServerToolUse(message: Json): boolean {
  const { content } = message;
  return (
    message.role === 'assistant' &&
    Array.isArray(content) &&
    isObject(content.at(-1)) &&
    (content.at(-1) as Json).type === 'server_tool_use'
  );
}

function validateSystem(system: unknown): void {
  if (system === undefined || typeof system === 'string') return;
  if (!Array.isArray(system))
    throw invalid('system: Input should be a valid string or a list of text blocks');
  for (let i = 0; i < system.length; i++) {
    const block: unknown = system[i];
    if (!isObject(block) || block.type !== 'text' || typeof block.text !== 'string') {
      throw invalid(`system.${i}: Input should be a text block with a 'text' string`);
    }
  }
}

function validateTools(tools: unknown, choice: unknown): void {
  if (tools !== undefined) {
    if (!Array.isArray(tools)) throw invalid('tools: Input should be a valid list');
    for (let i = 0; i < tools.length; i++) {
      const tool: unknown = tools[i];
      if (!isObject(tool)) throw invalid(`tools.${i}: Input should be a valid dictionary`);
      if (!isCustomTool(tool)) continue;
      if (typeof tool.name !== 'string' || tool.name === '')
        throw invalid(`tools.${i}.custom.name: Field required`);
      if (!isObject(tool.input_schema)) throw invalid(`tools.${i}.custom.input_schema: Field required`);
    }
  }
  if (choice === undefined) return;
  if (!isObject(choice) || !['auto', 'any', 'tool', 'none'].includes(choice.type as string)) {
    throw invalid("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'");
  }
  if (choice.type !== 'tool') return;
  if (typeof choice.name !== 'string') throw invalid('tool_choice.tool.name: Field required');
  if (!Array.isArray(tools) || !tools.some((t: Json) => t.name === choice.name)) {
    throw invalid(`tool_choice.tool.name: tool '${choice.name}' is not in tools`);
  }
}

function validateThinking(body: Json): void {
  const thinking = body.thinking;
  if (thinking === undefined || thinking === null) return;
  if (!isObject(thinking)) throw invalid('thinking: Input should be a valid dictionary');
  if (thinking.type !== 'enabled') return;
  const budget = thinking.budget_tokens;
  if (typeof budget !== 'number' || !Number.isInteger(budget))
    throw invalid('thinking.enabled.budget_tokens: Field required');
  if (budget < 1024)
    throw invalid('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
  if ((body.max_tokens as number) <= budget)
    throw invalid('`max_tokens` must be greater than `thinking.budget_tokens`.');
  const choice = body.tool_choice as Json | undefined;
  if (choice && (choice.type === 'any' || choice.type === 'tool')) {
    throw invalid('Thinking may not be enabled when tool_choice forces tool use.');
  }
}

/** A tool the caller implements (no `type`, or `custom`), as opposed to a server tool. */
export const isCustomTool = (tool: Json): boolean => tool.type === undefined || tool.type === 'custom';

/**
 * What version 2026-10-21 refuses that 2023-06-01 takes, for messages, token counting and each
 * request of a batch: the sampling parameters (even at their defaults), a document block placed
 * directly in an assistant message, and a text block with non-empty citations in a user message
 * (a search_result block's text blocks too). Source: platform.claude.com/docs/en/api/migration-2026-10-21
 * (read 2026-11-29); the wording of the sampling refusal as reported by clients that met it.
 */
function validate20261021(body: Json): void {
  for (const name of ['temperature', 'top_p', 'top_k'])
    if (body[name] !== undefined) throw invalid(`${name}: Extra inputs are not permitted`);
  if (!Array.isArray(body.messages)) return;
  body.messages.forEach((message: unknown, i: number) => {
    if (!isObject(message) || !Array.isArray(message.content)) return;
    message.content.forEach((block: unknown, j: number) => {
      if (!isObject(block)) return;
      const at = `messages.${i}.content.${j}`;
      if (message.role === 'assistant' && block.type === 'document')
        throw invalid(
          `${at}: document blocks are not accepted in assistant messages; send the document in a user message.`,
        );
      if (message.role !== 'user') return;
      const texts = block.type === 'search_result' && Array.isArray(block.content) ? block.content : [block];
      texts.forEach((text: unknown, k: number) => {
        if (
          isObject(text) &&
          text.type === 'text' &&
          Array.isArray(text.citations) &&
          text.citations.length > 0
        )
          throw invalid(
            `${block === text ? at : `${at}.content.${k}`}.citations: citations are not accepted on text blocks in user messages.`,
          );
      });
    });
  });
}
