import { invalid } from './errors';
import type { Json, MessagesBody } from './types';

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Parses a request body; the provider answers bad JSON with a 400. */
export function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw invalid(`There was an issue with your request body: invalid JSON (${(err as Error).message}).`);
  }
}

/**
 * Checks what the emulator needs, with the provider's field-path messages; everything else in
 * the body is left alone (gateways forward bodies byte for byte, with fields we do not know).
 */
export function validateMessages(body: unknown, endpoint: 'messages' | 'count_tokens'): MessagesBody {
  if (!isObject(body)) throw invalid('The request body must be a JSON object.');
  if (typeof body.model !== 'string' || body.model === '') throw invalid('model: Field required');
  if (endpoint === 'messages') {
    const max = body.max_tokens;
    if (max === undefined) throw invalid('max_tokens: Field required');
    if (typeof max !== 'number' || !Number.isInteger(max)) throw invalid('max_tokens: Input should be a valid integer');
    if (max < 1) throw invalid('max_tokens: Input should be greater than or equal to 1');
  }
  if (body.stream !== undefined && typeof body.stream !== 'boolean') throw invalid('stream: Input should be a valid boolean');
  validateMessageList(body.messages);
  validateSystem(body.system);
  validateTools(body.tools, body.tool_choice);
  if (body.stop_sequences !== undefined) {
    if (!Array.isArray(body.stop_sequences) || !body.stop_sequences.every((s) => typeof s === 'string')) {
      throw invalid('stop_sequences: Input should be a valid list of strings');
    }
  }
  if (endpoint === 'messages') validateThinking(body);
  return body as MessagesBody;
}

function validateMessageList(messages: unknown): void {
  if (messages === undefined) throw invalid('messages: Field required');
  if (!Array.isArray(messages)) throw invalid('messages: Input should be a valid list');
  if (messages.length === 0) throw invalid('messages: at least one message is required');
  for (let i = 0; i < messages.length; i++) {
    const message: unknown = messages[i];
    if (!isObject(message)) throw invalid(`messages.${i}: Input should be a valid dictionary`);
    if (message.role !== 'user' && message.role !== 'assistant') {
      throw invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    }
    const { content } = message;
    if (typeof content === 'string') continue;
    if (!Array.isArray(content)) throw invalid(`messages.${i}.content: Input should be a valid string or a list of content blocks`);
    for (let j = 0; j < content.length; j++) {
      const block: unknown = content[j];
      if (!isObject(block) || typeof block.type !== 'string') throw invalid(`messages.${i}.content.${j}.type: Field required`);
      if (block.type === 'text' && typeof block.text !== 'string') throw invalid(`messages.${i}.content.${j}.text.text: Field required`);
    }
  }
}

function validateSystem(system: unknown): void {
  if (system === undefined || typeof system === 'string') return;
  if (!Array.isArray(system)) throw invalid('system: Input should be a valid string or a list of text blocks');
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
      if (typeof tool.name !== 'string' || tool.name === '') throw invalid(`tools.${i}.custom.name: Field required`);
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
  if (typeof budget !== 'number' || !Number.isInteger(budget)) throw invalid('thinking.enabled.budget_tokens: Field required');
  if (budget < 1024) throw invalid('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
  if ((body.max_tokens as number) <= budget) throw invalid('`max_tokens` must be greater than `thinking.budget_tokens`.');
  const choice = body.tool_choice as Json | undefined;
  if (choice && (choice.type === 'any' || choice.type === 'tool')) {
    throw invalid('Thinking may not be enabled when tool_choice forces tool use.');
  }
}

/** A tool the caller implements (no `type`, or `custom`), as opposed to a server tool. */
export const isCustomTool = (tool: Json): boolean => tool.type === undefined || tool.type === 'custom';
