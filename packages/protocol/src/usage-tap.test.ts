import { describe, expect, it } from 'vitest';
import { JsonUsageTap, SseUsageTap } from './usage-tap';

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

const startUsage = {
  input_tokens: 377,
  cache_creation_input_tokens: 120,
  cache_read_input_tokens: 50,
  cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 20 },
  output_tokens: 1,
  service_tier: 'standard',
};

const stream = [
  frame('message_start', {
    type: 'message_start',
    message: { id: 'msg_1', model: 'claude-x', content: [], usage: startUsage },
  }),
  frame('content_block_start', {
    type: 'content_block_start',
    index: 0,
    content_block: { type: 'text', text: '' },
  }),
  'event: ping\ndata: {"type": "ping"}\n\n',
  frame('content_block_delta', {
    type: 'content_block_delta',
    index: 0,
    delta: { type: 'text_delta', text: 'Grüße 👋 from “Paris”' },
  }),
  frame('content_block_stop', { type: 'content_block_stop', index: 0 }),
  frame('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: null },
    usage: { output_tokens: 20 },
  }),
  frame('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn' },
    usage: { output_tokens: 65, input_tokens: 377, server_tool_use: { web_search_requests: 2 } },
  }),
  frame('message_stop', { type: 'message_stop' }),
].join('');

const expected = {
  ...startUsage,
  output_tokens: 65,
  server_tool_use: { web_search_requests: 2 },
};

function tapIn(chunks: Buffer[]): SseUsageTap {
  const tap = new SseUsageTap();
  for (const c of chunks) tap.write(c);
  tap.end();
  return tap;
}

describe('SseUsageTap', () => {
  it('reads message_start usage overwritten by every message_delta, never summed', () => {
    const tap = tapIn([Buffer.from(stream)]);
    expect(tap.usage).toEqual(expected);
    expect(tap.messageId).toBe('msg_1');
    expect(tap.model).toBe('claude-x');
    expect(tap.stopReason).toBe('end_turn');
    expect(tap.complete).toBe(true);
    expect(tap.errorType).toBeNull();
  });

  it('gives the same answer wherever the network splits the bytes', () => {
    const bytes = Buffer.from(stream);
    for (let cut = 1; cut < bytes.length; cut++) {
      const tap = tapIn([bytes.subarray(0, cut), bytes.subarray(cut)]);
      expect(tap.usage, `split at byte ${cut}`).toEqual(expected);
      expect(tap.complete).toBe(true);
    }
    const oneByOne = tapIn([...bytes].map((b) => Buffer.from([b])));
    expect(oneByOne.usage).toEqual(expected);
  });

  it('handles CRLF and lone CR line endings, split between CR and LF', () => {
    for (const eol of ['\r\n', '\r']) {
      const bytes = Buffer.from(stream.replaceAll('\n', eol));
      for (let cut = 1; cut < bytes.length; cut += 7) {
        const tap = tapIn([bytes.subarray(0, cut), bytes.subarray(cut)]);
        expect(tap.usage).toEqual(expected);
      }
    }
  });

  it('records an error event after HTTP 200 and keeps the usage seen so far', () => {
    const cut = stream.slice(0, stream.indexOf('event: message_delta'));
    const tap = tapIn([
      Buffer.from(
        cut + frame('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
      ),
    ]);
    expect(tap.errorType).toBe('overloaded_error');
    expect(tap.usage).toEqual(startUsage);
    expect(tap.complete).toBe(false);
  });

  it('counts a stream cut mid-event as incomplete with message_start usage', () => {
    const cutAt = stream.indexOf('"output_tokens":20') + 5;
    const tap = tapIn([Buffer.from(stream.slice(0, cutAt))]);
    expect(tap.complete).toBe(false);
    expect(tap.usage).toEqual(startUsage);
  });

  it('reads events that come without an event: line, and multi-line data', () => {
    const body =
      'data: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":5,"output_tokens":1}}}\n\n' +
      'data: {"type":"message_delta",\ndata: "usage":{"output_tokens":9}}\n\n';
    const tap = tapIn([Buffer.from(body)]);
    expect(tap.usage).toEqual({ input_tokens: 5, output_tokens: 9 });
  });
});

describe('JsonUsageTap', () => {
  it('reads usage from a message answer split over chunks', () => {
    const body = Buffer.from(
      JSON.stringify({ id: 'msg_2', type: 'message', model: 'm', stop_reason: 'end_turn', usage: expected }),
    );
    const tap = new JsonUsageTap();
    for (let i = 0; i < body.length; i += 10) tap.write(body.subarray(i, i + 10));
    tap.end();
    expect(tap.usage).toEqual(expected);
    expect(tap.messageId).toBe('msg_2');
    expect(tap.complete).toBe(true);
  });

  it('reads the error type of an error body', () => {
    const tap = new JsonUsageTap();
    tap.write(
      Buffer.from(
        '{"type":"error","error":{"type":"rate_limit_error","message":"slow down"},"request_id":"req_1"}',
      ),
    );
    tap.end();
    expect(tap.errorType).toBe('rate_limit_error');
    expect(tap.usage).toBeNull();
  });

  it('passes a body over its limit untapped', () => {
    const tap = new JsonUsageTap(16);
    tap.write(Buffer.from(JSON.stringify({ usage: { input_tokens: 1 } })));
    tap.end();
    expect(tap.usage).toBeNull();
  });
});
