import { describe, expect, it } from 'vitest';
import { estimateOutputTokens, scanDeltaLine, settleUsage } from './output-estimate';
import { SseUsageTap } from './usage-tap';

const deltaLine = (delta: Record<string, unknown>, index = 0) =>
  JSON.stringify({ type: 'content_block_delta', index, delta });
const scan = (line: string) => {
  const buf = Buffer.from(line);
  return scanDeltaLine(buf, 0, buf.length);
};

const samples = [
  '',
  'plain ascii words',
  'Grüße 👋 from “Paris” — naïve café',
  'line\nbreak\ttab "quoted" back\\slash',
  'control \u0001 and \u001f and del \u007f',
  '日本語のテキスト、中文文本',
  '{"city":"Paris","days":[1,2,3],"note":"a \\"nested\\" quote"}',
];

describe('scanDeltaLine', () => {
  it('measures the decoded UTF-8 bytes of text, thinking and tool input deltas, escapes undone', () => {
    for (const text of samples) {
      const bytes = Buffer.byteLength(text);
      expect(scan(deltaLine({ type: 'text_delta', text })), text).toBe(bytes);
      expect(scan(deltaLine({ type: 'thinking_delta', thinking: text }, 12))).toBe(bytes);
      expect(scan(deltaLine({ type: 'input_json_delta', partial_json: text }, 3))).toBe(bytes);
    }
  });

  it('undoes \\u escapes, surrogate pairs included, for a writer that escapes non-ASCII', () => {
    for (const text of samples) {
      const escaped = JSON.stringify(text).replace(
        /[\u007f-\uffff]/g,
        (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
      );
      expect(escaped).not.toMatch(/[^\x00-\x7f]/);
      const line = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${escaped}}}`;
      expect(scan(line), text).toBe(Buffer.byteLength(text));
    }
  });

  it('hands back every other delta type and layout to be parsed', () => {
    expect(scan(deltaLine({ type: 'signature_delta', signature: 'abc' }))).toBe(-1);
    expect(scan(deltaLine({ type: 'citations_delta', citation: { cited_text: 'x' } }))).toBe(-1);
    expect(
      scan(
        JSON.stringify({ index: 0, type: 'content_block_delta', delta: { type: 'text_delta', text: 'x' } }),
      ),
    ).toBe(-1);
    expect(
      scan(
        JSON.stringify({ type: 'content_block_delta', index: 0, delta: { text: 'x', type: 'text_delta' } }),
      ),
    ).toBe(-1);
    expect(
      scan(
        JSON.stringify({
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'text_delta', text: 'x', extra: 1 },
        }),
      ),
    ).toBe(-1);
    expect(
      scan(`{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}`),
    ).toBe(-1);
  });
});

describe('content counting in SseUsageTap', () => {
  const frame = (event: string, data: string) => `event: ${event}\ndata: ${data}\n\n`;
  const start = frame(
    'message_start',
    JSON.stringify({
      type: 'message_start',
      message: { id: 'msg_1', model: 'm', usage: { input_tokens: 10, output_tokens: 1 } },
    }),
  );
  const deltas = [
    deltaLine({ type: 'thinking_delta', thinking: 'Let me think “carefully”.' }),
    deltaLine({ type: 'signature_delta', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pk' }),
    deltaLine({ type: 'text_delta', text: 'Grüße 👋\n' }, 1),
    deltaLine({ type: 'input_json_delta', partial_json: '{"city": "Pa' }, 2),
    deltaLine({ type: 'input_json_delta', partial_json: 'ris"}' }, 2),
  ];
  const content = 'Let me think “carefully”.' + 'Grüße 👋\n' + '{"city": "Pa' + 'ris"}';
  const body = start + deltas.map((d) => frame('content_block_delta', d)).join('');

  it('counts the same bytes wherever the network splits the stream, with or without event: lines', () => {
    const bytes = Buffer.from(body);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const tap = new SseUsageTap();
      tap.write(bytes.subarray(0, cut));
      tap.write(bytes.subarray(cut));
      tap.end();
      expect(tap.contentBytes, `split at ${cut}`).toBe(Buffer.byteLength(content));
    }
    const bare = new SseUsageTap();
    bare.write(Buffer.from(body.replace(/event: [a-z_]+\n/g, '')));
    bare.end();
    expect(bare.contentBytes).toBe(Buffer.byteLength(content));
  });

  it('a stream cut before message_delta is estimated, never below the reported count', () => {
    const tap = new SseUsageTap();
    tap.write(Buffer.from(body));
    tap.end();
    const { usage, estimated } = settleUsage(tap);
    expect(estimated).toBe(true);
    expect(usage).toEqual({
      input_tokens: 10,
      output_tokens: estimateOutputTokens(Buffer.byteLength(content)),
    });
    expect(usage!.output_tokens).toBe(Math.ceil(Buffer.byteLength(content) / 3.5));

    const big = settleUsage({
      usage: { output_tokens: 500 },
      complete: false,
      deltaUsage: false,
      contentBytes: 35,
    });
    expect(big).toEqual({ usage: { output_tokens: 500 }, estimated: true });
  });

  it('keeps the provider count once its message_delta arrived, even if message_stop did not', () => {
    const tap = new SseUsageTap();
    tap.write(
      Buffer.from(
        body +
          frame(
            'message_delta',
            '{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}',
          ),
      ),
    );
    tap.end();
    expect(tap.complete).toBe(false);
    expect(settleUsage(tap)).toEqual({ usage: { input_tokens: 10, output_tokens: 7 }, estimated: false });
  });

  it('leaves complete answers and answers without usage alone', () => {
    expect(
      settleUsage({ usage: { output_tokens: 3 }, complete: true, deltaUsage: false, contentBytes: 1000 }),
    ).toEqual({ usage: { output_tokens: 3 }, estimated: false });
    expect(settleUsage({ usage: null, complete: false, deltaUsage: false, contentBytes: 1000 })).toEqual({
      usage: null,
      estimated: false,
    });
  });
});
