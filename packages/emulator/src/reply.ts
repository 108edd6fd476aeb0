import { modelData } from './models';
import { createHash } from 'node:crypto';
import type { CacheSplit } from './cache';
import { newMessageId, newServerToolUseId, newToolUseId } from './ids';
import type { Scenario } from './scenarios';
import { chooseTool, malformedToolInput, toolInput } from './tools';
import type { Json, MessagesBody, Usage } from './types';

export const DEFAULT_REPLY_WORDS = 24;
export const THINKING_WORDS = 16;
const FILLER =
  'the emulator keeps this answer deterministic so tests can count every word it streams back today'.split(
    ' ',
  );

/**
 * Text is kept as pieces (one word each, with its leading space) so a stream can chunk it
 * and output_tokens is simply the number of pieces.
 */
export type PlannedBlock =
  | { type: 'thinking'; pieces: string[]; signature: string }
  | { type: 'text'; pieces: string[] }
  | { type: 'tool_use'; id: string; name: string; json: string }
  | { type: 'server_tool_use'; id: string; name: string; json: string }
  | { type: 'web_search_tool_result'; toolUseId: string; content: Json[] };

export interface Plan {
  id: string;
  model: string;
  blocks: PlannedBlock[];
  stopReason: string;
  stopSequence: string | null;
  usage: Usage;
}

/**
 * The deterministic reply to a request. Output tokens = words of thinking and text (a word
 * cut by a stop sequence counts) + ceil(UTF-8 bytes of each tool input JSON / 4), within
 * `max_tokens` (cut → stop_reason `max_tokens`).
 */
export function planReply(body: MessagesBody, scenario: Scenario, split: CacheSplit): Plan {
  const budget = new Budget(body.max_tokens);
  const blocks: PlannedBlock[] = [];
  const text = lastUserText(body);
  const lead = leadWords(text);
  const choice = body.tool_choice?.type ?? 'auto';
  const toolsAllowed = choice !== 'none' && !lastUserHasToolResult(body);
  const tools = body.tools ?? [];
  const tool = toolsAllowed ? chooseTool(tools, body.tool_choice, text) : undefined;
  const search =
    toolsAllowed && choice === 'auto'
      ? tools.find((t) => String(t.type ?? '').startsWith('web_search'))
      : undefined;
  let stopSequence: string | null = null;

  run: {
    const thinking = body.thinking;
    if (thinking?.type === 'enabled' || thinking?.type === 'adaptive' || scenario.has.has('thinking')) {
      const wanted = Math.min(THINKING_WORDS, thinking?.budget_tokens ?? THINKING_WORDS);
      const pieces = toPieces(['Emulated', 'thinking', 'about:', ...lead], budget.take(wanted));
      // display "omitted": the reasoning is billed but not shown; the signature still comes.
      blocks.push({
        type: 'thinking',
        pieces: thinking?.display === 'omitted' ? [] : pieces,
        signature: signatureOf(pieces),
      });
      if (pieces.length < wanted) break run;
    }
    if (search) {
      const json = JSON.stringify({ query: lead.join(' ') || 'emulated search query' });
      if (!budget.fits(tokensOfJson(json))) break run;
      const id = newServerToolUseId();
      blocks.push({ type: 'server_tool_use', id, name: 'web_search', json });
      blocks.push({ type: 'web_search_tool_result', toolUseId: id, content: [SEARCH_RESULT] });
    }
    // A forced tool choice prefills the turn: no text before the tool_use, as with the provider.
    const forced = choice === 'any' || choice === 'tool';
    if (!(tool && forced)) {
      const words = tool
        ? ['I', 'will', 'call', String(tool.name), 'now.']
        : ['Emulated', 'reply', 'to:', ...lead];
      const wanted =
        scenario.outputTokens ??
        (tool ? words.length : scenario.has.has('paced') ? scenario.deltas : DEFAULT_REPLY_WORDS);
      let pieces = toPieces(words, budget.take(wanted));
      const stop = findStop(pieces, body.stop_sequences);
      if (stop) {
        pieces = stop.pieces;
        budget.giveBack(stop.returned);
        stopSequence = stop.sequence;
      }
      if (pieces.length > 0) blocks.push({ type: 'text', pieces });
      if (stop) break run;
      if (pieces.length < wanted) break run;
    }
    if (tool) {
      const input = scenario.has.has('malformed_tool_input') ? malformedToolInput(tool) : toolInput(tool);
      const json = JSON.stringify(input);
      if (!budget.fits(tokensOfJson(json))) break run;
      blocks.push({ type: 'tool_use', id: newToolUseId(), name: String(tool.name), json });
    }
  }
  const stopReason =
    stopSequence !== null
      ? 'stop_sequence'
      : budget.exhausted
        ? 'max_tokens'
        : blocks.some((b) => b.type === 'tool_use')
          ? 'tool_use'
          : 'end_turn';

  return {
    id: newMessageId(),
    model: body.model,
    blocks,
    stopReason,
    stopSequence,
    usage: {
      input_tokens: split.input,
      cache_creation_input_tokens: split.creation5m + split.creation1h,
      cache_read_input_tokens: split.read,
      cache_creation: {
        ephemeral_5m_input_tokens: split.creation5m,
        ephemeral_1h_input_tokens: split.creation1h,
      },
      output_tokens: budget.used,
      server_tool_use: {
        web_search_requests: search && blocks.some((b) => b.type === 'server_tool_use') ? 1 : 0,
      },
      service_tier: 'standard',
      speed: body.speed === 'fast' ? 'fast' : 'standard',
      // Only models with data-residency controls report where inference ran.
      ...(modelData(body.model)?.inference_geo
        ? { inference_geo: typeof body.inference_geo === 'string' ? body.inference_geo : 'global' }
        : {}),
    },
  };
}

/** The content block as the non-streaming response (and the stream, once complete) has it. */
export function blockJson(block: PlannedBlock): Json {
  switch (block.type) {
    case 'thinking':
      return { type: 'thinking', thinking: block.pieces.join(''), signature: block.signature };
    case 'text':
      return { type: 'text', text: block.pieces.join('') };
    case 'tool_use':
    case 'server_tool_use':
      return { type: block.type, id: block.id, name: block.name, input: JSON.parse(block.json) as unknown };
    case 'web_search_tool_result':
      return { type: block.type, tool_use_id: block.toolUseId, content: block.content };
  }
}

export function messageJson(plan: Plan): string {
  return JSON.stringify({
    id: plan.id,
    type: 'message',
    role: 'assistant',
    model: plan.model,
    content: plan.blocks.map(blockJson),
    stop_reason: plan.stopReason,
    stop_sequence: plan.stopSequence,
    usage: plan.usage,
  });
}

export const tokensOfJson = (json: string): number => Math.ceil(Buffer.byteLength(json) / 4);

class Budget {
  used = 0;
  exhausted = false;
  constructor(private readonly max: number) {}
  take(wanted: number): number {
    const granted = Math.min(wanted, this.max - this.used);
    if (granted < wanted) this.exhausted = true;
    this.used += granted;
    return granted;
  }
  fits(cost: number): boolean {
    if (this.used + cost > this.max) {
      this.exhausted = true;
      return false;
    }
    this.used += cost;
    return true;
  }
  giveBack(tokens: number): void {
    this.used -= tokens;
    this.exhausted = false;
  }
}

const SEARCH_RESULT: Json = {
  type: 'web_search_result',
  title: 'Emulated search result',
  url: 'https://example.com/emulated-result',
  encrypted_content: 'RW11bGF0ZWQgc2VhcmNoIHJlc3VsdA==',
  page_age: null,
};

function toPieces(lead: string[], count: number): string[] {
  const pieces: string[] = new Array<string>(count);
  for (let i = 0; i < count; i++) {
    const word = i < lead.length ? lead[i]! : FILLER[(i - lead.length) % FILLER.length]!;
    pieces[i] = i === 0 ? word : ` ${word}`;
  }
  return pieces;
}

/** Cuts the text before the earliest stop sequence; `returned` = tokens no longer produced. */
function findStop(pieces: string[], sequences: string[] | undefined) {
  if (!sequences || sequences.length === 0 || pieces.length === 0) return null;
  const text = pieces.join('');
  let at = -1;
  let sequence = '';
  for (const s of sequences) {
    const i = s === '' ? -1 : text.indexOf(s);
    if (i !== -1 && (at === -1 || i < at)) [at, sequence] = [i, s];
  }
  if (at === -1) return null;
  const kept: string[] = [];
  let offset = 0;
  for (const piece of pieces) {
    if (offset >= at) break;
    const part = offset + piece.length <= at ? piece : piece.slice(0, at - offset);
    // A word cut down to its leading space is no word: the space joins the previous one.
    if (part.trim() === '' && kept.length > 0) kept[kept.length - 1] += part;
    else kept.push(part);
    offset += piece.length;
  }
  return { pieces: kept, sequence, returned: pieces.length - kept.length };
}

/** The first words of the last user text, to make replies recognisable in tests and demos. */
function leadWords(text: string): string[] {
  const words: string[] = [];
  // A scan rather than split(/\s+/): the text can be a whole document, we need six words.
  let start = -1;
  for (let i = 0; i <= text.length && words.length < 6; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 32;
    const space = c === 32 || (c >= 9 && c <= 13);
    if (space && start !== -1) {
      words.push(text.slice(start, i));
      start = -1;
    } else if (!space && start === -1) {
      start = i;
    }
  }
  return words;
}

/**
 * The user's last words: the last text block of the last user message (or of its tool result).
 * Clients such as Claude Code put reminders in text blocks before the prompt itself.
 */
function lastUserText(body: MessagesBody): string {
  for (let i = body.messages.length - 1; i >= 0; i--) {
    const message = body.messages[i]!;
    if (message.role !== 'user') continue;
    return lastText(message.content);
  }
  return '';
}

function lastText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  for (let i = content.length - 1; i >= 0; i--) {
    const block = content[i] as Json;
    if (block.type === 'text' && typeof block.text === 'string') return block.text;
    if (block.type === 'tool_result') {
      const inner = lastText(block.content);
      if (inner !== '') return inner;
    }
  }
  return '';
}

function lastUserHasToolResult(body: MessagesBody): boolean {
  for (let i = body.messages.length - 1; i >= 0; i--) {
    const { role, content } = body.messages[i]!;
    if (role === 'user') return Array.isArray(content) && content.some((b) => b.type === 'tool_result');
  }
  return false;
}

function signatureOf(pieces: string[]): string {
  return createHash('sha256').update(pieces.join('')).digest('base64');
}
