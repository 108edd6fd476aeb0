import type Anthropic from '@anthropic-ai/sdk';
import { Keygate } from './client';
import type { KeygateOptions } from './options';

// Fakes for the unit tests: a scripted `fetch` behind a real Keygate client, and provider-shaped bodies.

export interface SentRequest {
  url: string;
  method: string;
  headers: Headers;
  body: Record<string, any> | undefined;
}

export type Reply = (
  request: SentRequest,
  index: number,
  signal: AbortSignal | undefined,
) => Response | Promise<Response>;

export function fakeFetch(reply: Reply) {
  const sent: SentRequest[] = [];
  const fetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const request: SentRequest = {
      url: String(input),
      method: init.method ?? 'GET',
      headers: new Headers(init.headers),
      body: typeof init.body === 'string' ? (JSON.parse(init.body) as Record<string, any>) : undefined,
    };
    sent.push(request);
    const signal = init.signal ?? undefined;
    if (signal?.aborted) throw abortError();
    return reply(request, sent.length - 1, signal);
  };
  return { fetch, sent };
}

export function unitClient(fetch: KeygateOptions['fetch'], opts: KeygateOptions = {}): Keygate {
  return new Keygate({ appKey: 'kg_test_unit', baseURL: 'http://gateway.test', fetch, ...opts });
}

export function abortError(): Error {
  return Object.assign(new Error('This operation was aborted'), { name: 'AbortError' });
}

/** A fetch result that never comes, until the request is aborted. */
export function hang(signal: AbortSignal | undefined): Promise<Response> {
  return new Promise((_, reject) =>
    signal?.addEventListener('abort', () => reject(abortError()), { once: true }),
  );
}

export const USAGE = {
  input_tokens: 120,
  cache_creation_input_tokens: 30,
  cache_read_input_tokens: 7,
  cache_creation: { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 20 },
  output_tokens: 42,
  server_tool_use: { web_search_requests: 0 },
  service_tier: 'standard',
};

let ids = 0;

export function message(
  content: Anthropic.ContentBlock[] | string,
  extra: Partial<Record<string, unknown>> = {},
): Record<string, unknown> {
  const blocks = typeof content === 'string' ? [{ type: 'text', text: content }] : content;
  return {
    id: `msg_unit_${++ids}`,
    type: 'message',
    role: 'assistant',
    model: 'claude-opus-4-5',
    content: blocks,
    stop_reason: blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: USAGE,
    ...extra,
  };
}

export function toolUse(name: string, input: unknown, id = `toolu_unit_${++ids}`): Anthropic.ToolUseBlock {
  return { type: 'tool_use', id, name, input, caller: { type: 'direct' } } as Anthropic.ToolUseBlock;
}

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'request-id': `req_unit_${++ids}`, ...headers },
  });
}

export function errorBody(type: string, message = 'unit'): Record<string, unknown> {
  return { type: 'error', error: { type, message }, request_id: 'req_unit' };
}

/** SSE frames for a short text reply whose usage grows over two message_delta events. */
export function textStreamFrames(text = 'Hello there', usage = USAGE): string[] {
  const start = { ...usage, output_tokens: 1 };
  const half = { output_tokens: Math.floor(usage.output_tokens / 2) };
  return [
    frame('message_start', {
      type: 'message_start',
      message: { ...message([]), content: [], stop_reason: null, usage: start },
    }),
    frame('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    }),
    frame('ping', { type: 'ping' }),
    frame('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text },
    }),
    frame('content_block_stop', { type: 'content_block_stop', index: 0 }),
    frame('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: null, stop_sequence: null },
      usage: half,
    }),
    frame('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: usage.output_tokens, input_tokens: usage.input_tokens },
    }),
    frame('message_stop', { type: 'message_stop' }),
  ];
}

export function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** A streaming response whose body the test writes frame by frame; like fetch, it errors when the request is aborted. */
export function controlledStream(signal?: AbortSignal) {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  const encoder = new TextEncoder();
  signal?.addEventListener('abort', () => controller.error(abortError()), { once: true });
  return {
    response: new Response(body, {
      status: 200,
      headers: { 'content-type': 'text/event-stream', 'request-id': 'req_unit_stream' },
    }),
    write: (text: string) => controller.enqueue(encoder.encode(text)),
    close: () => controller.close(),
    fail: (error: Error) => controller.error(error),
  };
}

export function sseResponse(frames: string[]): Response {
  return new Response(frames.join(''), {
    status: 200,
    headers: { 'content-type': 'text/event-stream', 'request-id': 'req_unit_stream' },
  });
}
