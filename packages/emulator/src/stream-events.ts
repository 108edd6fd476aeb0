import { blockJson, tokensOfJson, type Plan, type PlannedBlock } from './reply';
import type { Scenario } from './scenarios';
import type { Usage } from './types';

export type EventKind =
  | 'message_start'
  | 'content_block_delta'
  | 'message_delta'
  | 'message_stop'
  | 'error'
  | 'other';

export interface StreamEvent {
  kind: EventKind;
  /** The exact bytes: `event: X\ndata: JSON\n\n`. */
  frame: string;
  /** message_start: the whole initial usage; message_delta: the running totals it carries. */
  usage?: Partial<Usage>;
  /** Wait this long before writing the event (paced streams). */
  delayMs: number;
  /** content_block_delta: the output tokens it carries (what the provider bills if the stream stops here). */
  tokens?: number;
}

const frame = (event: string, data: string): string => `event: ${event}\ndata: ${data}\n\n`;

// Static frames, built once. The ping keeps the provider's spacing, byte for byte.
const PING: StreamEvent = { kind: 'other', frame: 'event: ping\ndata: {"type": "ping"}\n\n', delayMs: 0 };
const MESSAGE_STOP: StreamEvent = {
  kind: 'message_stop',
  frame: frame('message_stop', '{"type":"message_stop"}'),
  delayMs: 0,
};
const BLOCK_STOPS = Array.from({ length: 8 }, (_, i) => blockStop(i));
export const OVERLOADED_ERROR: StreamEvent = {
  kind: 'error',
  frame: frame('error', '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'),
  delayMs: 0,
};

const TEXT_WORDS_PER_DELTA = 4;
/** input_json_delta chunk lengths, cycled: splits land mid-token, mid-string, anywhere. */
const JSON_CUTS = [7, 3, 12, 5, 9];

/** Every event of a full stream for `plan`, in the provider's order. */
export function buildEvents(plan: Plan, scenario: Scenario): StreamEvent[] {
  const { usage } = plan;
  const startUsage: Usage = { ...usage, output_tokens: 1, server_tool_use: { web_search_requests: 0 } };
  const message = {
    id: plan.id,
    type: 'message',
    role: 'assistant',
    model: plan.model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: startUsage,
  };
  const events: StreamEvent[] = [
    {
      kind: 'message_start',
      frame: frame('message_start', JSON.stringify({ type: 'message_start', message })),
      usage: startUsage,
      delayMs: 0,
    },
  ];
  const paced = scenario.has.has('paced');
  plan.blocks.forEach((block, index) => {
    events.push({ kind: 'other', frame: blockStart(block, index), delayMs: 0 });
    if (index === 0) events.push(PING);
    for (const delta of blockDeltas(block, index, paced ? scenario.deltas : 0)) events.push(delta);
    events.push(BLOCK_STOPS[index] ?? blockStop(index));
  });
  if (plan.blocks.length === 0) events.push(PING);
  if (paced) {
    // The first delta goes out at once; each later one `intervalMs` after the previous.
    let first = true;
    for (const event of events) {
      if (event.kind !== 'content_block_delta') continue;
      if (!first) event.delayMs = scenario.intervalMs;
      first = false;
    }
  }
  const steps = scenario.has.has('multi_delta') ? 3 : 1;
  for (let step = 1; step <= steps; step++) {
    const running: Partial<Usage> = {
      input_tokens: usage.input_tokens,
      cache_creation_input_tokens: usage.cache_creation_input_tokens,
      cache_read_input_tokens: usage.cache_read_input_tokens,
      output_tokens: Math.ceil((usage.output_tokens * step) / steps),
      server_tool_use: usage.server_tool_use,
    };
    const data = JSON.stringify({
      type: 'message_delta',
      delta: { stop_reason: plan.stopReason, stop_sequence: plan.stopSequence },
      usage: running,
    });
    events.push({ kind: 'message_delta', frame: frame('message_delta', data), usage: running, delayMs: 0 });
  }
  events.push(MESSAGE_STOP);
  return events;
}

/** The provider's final stream usage: message_start's, overwritten field by field by each message_delta. */
export function foldUsage(current: Usage | null, event: StreamEvent): Usage | null {
  if (event.kind === 'message_start') {
    const start = event.usage as Usage;
    return {
      ...start,
      cache_creation: { ...start.cache_creation },
      server_tool_use: { ...start.server_tool_use },
    };
  }
  if (event.kind === 'message_delta' && current) return { ...current, ...event.usage };
  return current;
}

function blockStart(block: PlannedBlock, index: number): string {
  let start: unknown;
  switch (block.type) {
    case 'thinking':
      start = { type: 'thinking', thinking: '', signature: '' };
      break;
    case 'text':
      start = { type: 'text', text: '' };
      break;
    case 'tool_use':
    case 'server_tool_use':
      start = { type: block.type, id: block.id, name: block.name, input: {} };
      break;
    case 'web_search_tool_result':
      start = blockJson(block);
  }
  return frame(
    'content_block_start',
    `{"type":"content_block_start","index":${index},"content_block":${JSON.stringify(start)}}`,
  );
}

function blockStop(index: number): StreamEvent {
  return {
    kind: 'other',
    frame: frame('content_block_stop', `{"type":"content_block_stop","index":${index}}`),
    delayMs: 0,
  };
}

function delta(index: number, body: string, tokens: number): StreamEvent {
  return {
    kind: 'content_block_delta',
    frame: frame('content_block_delta', `{"type":"content_block_delta","index":${index},"delta":${body}}`),
    delayMs: 0,
    tokens,
  };
}

function blockDeltas(block: PlannedBlock, index: number, pacedDeltas: number): StreamEvent[] {
  switch (block.type) {
    case 'text':
      return groups(block.pieces, pacedDeltas).map((g) =>
        delta(index, `{"type":"text_delta","text":${JSON.stringify(g.text)}}`, g.words),
      );
    case 'thinking':
      return [
        ...groups(block.pieces, 0).map((g) =>
          delta(index, `{"type":"thinking_delta","thinking":${JSON.stringify(g.text)}}`, g.words),
        ),
        delta(index, `{"type":"signature_delta","signature":${JSON.stringify(block.signature)}}`, 0),
      ];
    case 'tool_use':
    case 'server_tool_use': {
      // The provider opens with an empty partial_json; clients must only parse at block stop.
      const out = [delta(index, '{"type":"input_json_delta","partial_json":""}', 0)];
      // Tool input costs ceil(bytes / 4) (reply.ts); each piece carries its share of that.
      let billed = 0;
      for (let at = 0, cut = 0; at < block.json.length; cut++) {
        const piece = block.json.slice(at, at + JSON_CUTS[cut % JSON_CUTS.length]!);
        at += piece.length;
        const upTo = tokensOfJson(block.json.slice(0, at));
        out.push(
          delta(index, `{"type":"input_json_delta","partial_json":${JSON.stringify(piece)}}`, upTo - billed),
        );
        billed = upTo;
      }
      return out;
    }
    case 'web_search_tool_result':
      return [];
  }
}

/** Joins pieces (one word, one token each) into `count` near-equal chunks (0: four words a chunk). */
function groups(pieces: string[], count: number): { text: string; words: number }[] {
  const n = count > 0 ? Math.min(count, pieces.length) : Math.ceil(pieces.length / TEXT_WORDS_PER_DELTA);
  const out: { text: string; words: number }[] = [];
  for (let g = 0; g < n; g++) {
    const from = Math.floor((g * pieces.length) / n);
    const to = Math.floor(((g + 1) * pieces.length) / n);
    out.push({ text: to - from === 1 ? pieces[from]! : pieces.slice(from, to).join(''), words: to - from });
  }
  return out;
}
