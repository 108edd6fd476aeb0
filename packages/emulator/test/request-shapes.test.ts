import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ask, MODEL, parseSse, post, useEmulator } from './helpers';

const ctx = useEmulator();
const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url));
/** What Claude Code 2.1.330 sent for `claude -p "hi"`, byte for byte (ids and paths made neutral). */
const CLAUDE_CODE_BODY = fixture('claude-code-2.1.330-request.json');
const CLAUDE_CODE = JSON.parse(fixture('claude-code-2.1.330-request-headers.json').toString()) as {
  url: string;
  headers: Record<string, string>;
};
const PER_TURN = { 'anthropic-beta': 'per-turn-control-2026-07-01' };

type Usage = Record<string, unknown>;

/** The stream's usage as a client folds it: message_start's, overwritten field by field by each message_delta's. */
function foldUsage(events: { event: string; data: string }[]): Usage {
  let usage: Usage = {};
  for (const { event, data } of events) {
    const parsed = JSON.parse(data) as { message?: { usage: Usage }; usage?: Usage };
    if (event === 'message_start') usage = { ...parsed.message!.usage };
    if (event === 'message_delta') usage = { ...usage, ...parsed.usage };
  }
  return usage;
}

async function errorMessage(res: Response): Promise<string> {
  expect(res.status).toBe(400);
  const body = (await res.json()) as { type: string; error: { type: string; message: string } };
  expect(body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  return body.error.message;
}

describe("Claude Code 2.1.330's request", () => {
  it('is answered as a stream: a thinking block (display omitted), a text reply to "hi", no tool call, usage in the ledger equal to the stream', async () => {
    const res = await post(ctx.emulator, CLAUDE_CODE.url, CLAUDE_CODE_BODY.toString(), CLAUDE_CODE.headers);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events = parseSse(await res.text());
    expect(events.map((e) => e.event)).not.toContain('error');
    const blocks = events
      .filter((e) => e.event === 'content_block_start')
      .map((e) => JSON.parse(e.data).content_block.type);
    expect(blocks).toEqual(['thinking', 'text']);
    const deltas = events
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => JSON.parse(e.data).delta);
    expect(deltas.filter((d) => d.type === 'thinking_delta')).toEqual([]);
    expect(deltas.filter((d) => d.type === 'signature_delta')).toHaveLength(1);
    expect(
      deltas
        .filter((d) => d.type === 'text_delta')
        .map((d) => d.text)
        .join(''),
    ).toMatch(/^Emulated reply to: hi the emulator/);
    const messageDelta = JSON.parse(events.find((e) => e.event === 'message_delta')!.data);
    expect(messageDelta.delta.stop_reason).toBe('end_turn');

    const entry = await ctx.emulator.ledger.waitFor(
      (e) => e.requestId === res.headers.get('request-id'),
      2_000,
    );
    expect(entry).toMatchObject({ status: 200, stream: true, complete: true, model: 'claude-opus-5-5' });
    const usage = foldUsage(events);
    expect(entry.usage).toEqual(usage);
    // 16 thinking words (billed though not shown) + 24 words of text.
    expect(usage.output_tokens).toBe(40);
  });

  it('counts the same input tokens as count_tokens does for the same body', async () => {
    const res = await post(ctx.emulator, CLAUDE_CODE.url, CLAUDE_CODE_BODY.toString(), CLAUDE_CODE.headers);
    const usage = foldUsage(parseSse(await res.text())) as Record<string, number>;
    const { stream: _, max_tokens: __, ...countable } = JSON.parse(CLAUDE_CODE_BODY.toString());
    const counted = await post(
      ctx.emulator,
      '/v1/messages/count_tokens?beta=true',
      countable,
      CLAUDE_CODE.headers,
    );
    expect(counted.status).toBe(200);
    const { input_tokens } = (await counted.json()) as { input_tokens: number };
    expect(usage.input_tokens! + usage.cache_creation_input_tokens! + usage.cache_read_input_tokens!).toBe(
      input_tokens,
    );
    expect(input_tokens).toBeGreaterThan(10_000);
  });

  it('without the per-turn-control beta, its system message is refused in the provider wording', async () => {
    const headers = {
      ...CLAUDE_CODE.headers,
      'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14',
    };
    expect(
      await errorMessage(await post(ctx.emulator, CLAUDE_CODE.url, CLAUDE_CODE_BODY.toString(), headers)),
    ).toBe(
      'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.',
    );
  });
});

describe('request shapes the provider accepts today', () => {
  const turn = (...messages: unknown[]) => ({ model: MODEL, max_tokens: 200, messages });
  const user = (content: unknown = 'hello') => ({ role: 'user', content });
  const system = (content: unknown = 'Answer briefly.') => ({ role: 'system', content });

  it('a system message after a user turn, as the last message or before an assistant turn, with the beta', async () => {
    for (const body of [
      turn(user(), system()),
      turn(
        user(),
        system([{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }]),
        { role: 'assistant', content: 'ok' },
        user('and now?'),
      ),
      turn(
        user(),
        {
          role: 'assistant',
          content: [{ type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} }],
        },
        system(),
      ),
    ]) {
      const res = await post(ctx.emulator, '/v1/messages', body, PER_TURN);
      expect(res.status).toBe(200);
    }
  });

  it.each([
    ['first', turn(system(), user()), /^messages\.0: a system message cannot be the first message/],
    [
      'after an assistant turn',
      turn(user(), { role: 'assistant', content: 'x' }, system()),
      /^messages\.2: a system message must immediately follow a user message/,
    ],
    [
      'next to another system message',
      turn(user(), system(), system()),
      /^messages\.1: consecutive system messages/,
    ],
    [
      'followed by a user turn',
      turn(user(), system(), user()),
      /^messages\.1: a system message must be the last message or be followed by an assistant message/,
    ],
    [
      'holding an image',
      turn(user(), system([{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }])),
      /^messages\.1\.content\.0: a system message supports text blocks only/,
    ],
  ])('a system message placed %s is refused', async (_, body, message) => {
    expect(await errorMessage(await post(ctx.emulator, '/v1/messages', body, PER_TURN))).toMatch(message);
  });

  it('context_management, output_config with effort, adaptive thinking, metadata and unknown top-level fields', async () => {
    const body = ask('Think it over', {
      thinking: { type: 'adaptive' },
      output_config: { effort: 'high' },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      metadata: { user_id: 'someone' },
      a_field_from_2027: { anything: [1, 2, 3] },
    } as never);
    const res = await post(ctx.emulator, '/v1/messages?beta=true', body, {
      'anthropic-beta': 'context-management-2025-06-27,effort-2025-11-24',
    });
    expect(res.status).toBe(200);
    const message = (await res.json()) as {
      content: { type: string; thinking?: string }[];
      usage: { output_tokens: number };
    };
    expect(message.content.map((b) => b.type)).toEqual(['thinking', 'text']);
    expect(message.content[0]!.thinking).toMatch(/^Emulated thinking about: Think it over/);
    expect(message.usage.output_tokens).toBe(40);
    const disabled = await post(
      ctx.emulator,
      '/v1/messages',
      ask('No thinking', { thinking: { type: 'disabled' } }),
    );
    expect(((await disabled.json()) as { content: { type: string }[] }).content.map((b) => b.type)).toEqual([
      'text',
    ]);
  });

  it('unknown block types in content are opaque: counted as JSON, answered normally', async () => {
    const block = { type: 'hologram_20270101', beams: 3 };
    const res = await post(
      ctx.emulator,
      '/v1/messages',
      turn(user([block, { type: 'text', text: 'what is this?' }])),
    );
    expect(res.status).toBe(200);
    const message = (await res.json()) as { content: { text: string }[]; usage: { input_tokens: number } };
    expect(message.content[0]!.text).toMatch(/^Emulated reply to: what is this\?/);
    expect(message.usage.input_tokens).toBe(
      Math.ceil((JSON.stringify(block).length + 'what is this?'.length) / 4) + 10,
    );
  });

  it('tools of types it does not know are answered as plain text, never as a tool_use', async () => {
    const tools = [
      { type: 'quantum_search_20270101', name: 'quantum_search' },
      { type: 'bash_20250124', name: 'bash' },
    ];
    const res = await post(
      ctx.emulator,
      '/v1/messages',
      ask('quantum search for bash tips', { tools } as never),
    );
    expect(res.status).toBe(200);
    const message = (await res.json()) as { content: { type: string }[]; stop_reason: string };
    expect(message.content.map((b) => b.type)).toEqual(['text']);
    expect(message.stop_reason).toBe('end_turn');
  });
});
