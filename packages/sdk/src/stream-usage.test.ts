import { describe, expect, it } from 'vitest';
import { overlayUsage, SseUsageTap } from '@keygate/protocol';
import { frame, textStreamFrames, USAGE } from './test-support';

function read(chunks: Uint8Array[]) {
  const tap = new SseUsageTap();
  for (const chunk of chunks) tap.write(chunk);
  tap.end();
  return tap;
}

const bytes = (text: string) => new TextEncoder().encode(text);

describe('the stream usage tap the SDK uses', () => {
  it('final usage is message_start usage overwritten by each message_delta, never summed', () => {
    const facts = read([bytes(textStreamFrames().join(''))]);
    expect(facts).toMatchObject({
      messageId: expect.stringMatching(/^msg_/),
      model: 'claude-opus-4-5',
      stopReason: 'end_turn',
      errorType: null,
      complete: true,
    });
    expect(facts.usage).toEqual(USAGE);
  });

  it('reads the same facts wherever the network splits the bytes: inside a UTF-8 character, between \\r and \\n', () => {
    const text = textStreamFrames('naïve café — 日本語 ✓').join('').replaceAll('\n', '\r\n');
    const all = bytes(text);
    const whole = read([all]);
    expect(whole.complete).toBe(true);
    for (let cut = 1; cut < all.length; cut += 7) {
      expect(read([all.subarray(0, cut), all.subarray(cut)])).toEqual(whole);
    }
    expect(read(Array.from(all, (b) => Uint8Array.of(b)))).toEqual(whole);
  });

  it('accepts bare \\r line endings, comments, and events named only by their data type', () => {
    const text =
      `: keep-alive\r\rdata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_1', model: 'm', usage: { input_tokens: 5, output_tokens: 1 } } })}\r\r` +
      `data: ${JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'max_tokens' }, usage: { output_tokens: 9 } })}\r\r`;
    expect(read([bytes(text)])).toMatchObject({
      messageId: 'msg_1',
      usage: { input_tokens: 5, output_tokens: 9 },
      stopReason: 'max_tokens',
      complete: false,
    });
  });

  it('an error event after HTTP 200 is reported with the usage seen before it', () => {
    const frames = textStreamFrames().slice(0, 4);
    frames.push(
      frame('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
    );
    const facts = read([bytes(frames.join(''))]);
    expect(facts).toMatchObject({
      errorType: 'overloaded_error',
      complete: false,
      usage: { ...USAGE, output_tokens: 1 },
    });
  });

  it('a cut stream keeps what it had; a torn last event is ignored', () => {
    const text = `${textStreamFrames().slice(0, 6).join('')}event: message_delta\ndata: {"type":"message_de`;
    expect(read([bytes(text)])).toMatchObject({
      complete: false,
      usage: { output_tokens: Math.floor(USAGE.output_tokens / 2) },
    });
  });

  it('a last event without its blank line still counts', () => {
    const text = textStreamFrames().join('').trimEnd();
    expect(read([bytes(text)]).complete).toBe(true);
  });
});

describe('overlayUsage', () => {
  it('replaces present fields, nested ones one by one, and keeps fields that are absent or null', () => {
    const base = {
      input_tokens: 10,
      output_tokens: 1,
      cache_creation: { ephemeral_5m_input_tokens: 3, ephemeral_1h_input_tokens: 4 },
    };
    expect(
      overlayUsage(base, {
        output_tokens: 50,
        input_tokens: null,
        cache_creation: { ephemeral_1h_input_tokens: 6 },
      }),
    ).toEqual({
      input_tokens: 10,
      output_tokens: 50,
      cache_creation: { ephemeral_5m_input_tokens: 3, ephemeral_1h_input_tokens: 6 },
    });
  });
});
