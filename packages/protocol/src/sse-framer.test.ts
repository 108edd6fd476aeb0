import { describe, expect, it } from 'vitest';
import { eventName, SseFramer } from './sse-framer';

const STREAM =
  'event: message_start\ndata: {"type":"message_start"}\n\n: a comment\n\nevent: ping\ndata: {"type": "ping"}\r\n\r\n' +
  'event: content_block_delta\ndata: {"text":"héllo"}\n\nevent: message_stop\ndata: {}\n\n';

function frames(chunks: Uint8Array[]): { events: string[][]; boundaries: boolean[] } {
  const events: string[][] = [];
  const framer = new SseFramer((lines) => events.push([...lines]));
  const boundaries: boolean[] = [];
  for (const chunk of chunks) {
    framer.write(chunk);
    boundaries.push(framer.atBoundary);
  }
  framer.end();
  return { events, boundaries };
}

describe('SseFramer', () => {
  const bytes = new TextEncoder().encode(STREAM);
  const whole = frames([bytes]).events;

  it('cuts whole events, drops comments, reads CRLF', () => {
    expect(whole).toEqual([
      ['event: message_start', 'data: {"type":"message_start"}'],
      ['event: ping', 'data: {"type": "ping"}'],
      ['event: content_block_delta', 'data: {"text":"héllo"}'],
      ['event: message_stop', 'data: {}'],
    ]);
    expect(whole.map(eventName)).toEqual(['message_start', 'ping', 'content_block_delta', 'message_stop']);
  });

  it('gives the same events however the bytes are split (inside a line, a character, a CRLF)', () => {
    for (let at = 1; at < bytes.length; at++) {
      expect(frames([bytes.subarray(0, at), bytes.subarray(at)]).events).toEqual(whole);
    }
    expect(frames([...bytes].map((b) => Uint8Array.of(b))).events).toEqual(whole);
  });

  it('is at a boundary only between events', () => {
    const first = STREAM.indexOf('\n\n') + 2;
    const { boundaries } = frames([
      bytes.subarray(0, 10),
      bytes.subarray(10, first),
      bytes.subarray(first, first + 3),
    ]);
    expect(boundaries).toEqual([false, true, false]);
  });

  it('an event without its blank line counts at the end; reset drops a partial event', () => {
    const events: string[][] = [];
    const framer = new SseFramer((lines) => events.push([...lines]));
    framer.write(new TextEncoder().encode('event: a\ndata: 1\n\nevent: b\ndata: 2'));
    framer.reset();
    framer.write(new TextEncoder().encode('event: c\ndata: 3'));
    framer.end();
    expect(events).toEqual([
      ['event: a', 'data: 1'],
      ['event: c', 'data: 3'],
    ]);
  });
});
