import type Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { ask, parseSse, post, useEmulator } from './helpers';

const ctx = useEmulator();
const streamBody = (text = 'Stream please') => ({ ...ask(text), stream: true });
const scenario = (name: string, extra: Record<string, string> = {}) => ({
  'x-emulator-scenario': name,
  ...extra,
});

describe('SSE as the provider writes it', () => {
  it('framing, headers, event order and a ping after the first content_block_start', async () => {
    const res = await post(ctx.emulator, '/v1/messages', streamBody());
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const text = await res.text();
    expect(text).toContain('event: ping\ndata: {"type": "ping"}\n\n');
    const events = parseSse(text);
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      ...Array<string>(6).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    for (const { event, data } of events) expect((JSON.parse(data) as { type: string }).type).toBe(event);
    const start = JSON.parse(events[0]!.data) as { message: Anthropic.Message };
    expect(start.message.content).toEqual([]);
    expect(start.message.usage.output_tokens).toBe(1);
    const delta = JSON.parse(events.at(-2)!.data) as Anthropic.MessageDeltaEvent;
    expect(delta.delta.stop_reason).toBe('end_turn');
    expect(delta.usage).toMatchObject({
      input_tokens: start.message.usage.input_tokens,
      output_tokens: 24,
      cache_read_input_tokens: 0,
      server_tool_use: { web_search_requests: 0 },
    });
    const entry = ctx.emulator.ledger.byRequestId(res.headers.get('request-id')!)!;
    expect(entry).toMatchObject({ stream: true, complete: true, eventsSent: events.length });
  });

  it('multi_delta: running totals grow; the final usage is the last one, not the sum', async () => {
    const stream = ctx.client.messages.stream(ask('Totals'), { headers: scenario('multi_delta') });
    const outputs: number[] = [];
    stream.on('streamEvent', (event) => {
      if (event.type === 'message_delta') outputs.push(event.usage.output_tokens);
    });
    const message = await stream.finalMessage();
    expect(outputs).toEqual([8, 16, 24]);
    expect(message.usage.output_tokens).toBe(24);
    const entry = await ctx.emulator.ledger.waitFor((e) => e.messageId === message.id);
    expect(entry.usage).toMatchObject({ output_tokens: 24, input_tokens: message.usage.input_tokens });
  });

  it('scenarios combine: paced,multi_delta paces the deltas and grows the totals', async () => {
    const res = await post(
      ctx.emulator,
      '/v1/messages',
      streamBody(),
      scenario('paced, multi_delta', { 'x-emulator-deltas': '4', 'x-emulator-interval-ms': '5' }),
    );
    const events = parseSse(await res.text());
    expect(events.filter((e) => e.event === 'content_block_delta')).toHaveLength(4);
    const totals = events
      .filter((e) => e.event === 'message_delta')
      .map((e) => (JSON.parse(e.data) as Anthropic.MessageDeltaEvent).usage.output_tokens);
    expect(totals).toEqual([2, 3, 4]);
  });
});

describe('stream failures', () => {
  it('stream_error: HTTP 200, some deltas, then an overloaded error event and no message_stop', async () => {
    const res = await post(ctx.emulator, '/v1/messages', streamBody(), scenario('stream_error'));
    expect(res.status).toBe(200);
    const events = parseSse(await res.text());
    expect(events[0]!.event).toBe('message_start');
    expect(events.some((e) => e.event === 'content_block_delta')).toBe(true);
    expect(events.at(-1)).toEqual({
      event: 'error',
      data: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    });
    expect(events.some((e) => e.event === 'message_stop' || e.event === 'message_delta')).toBe(false);
    const entry = ctx.emulator.ledger.byRequestId(res.headers.get('request-id')!)!;
    expect(entry).toMatchObject({
      status: 200,
      complete: false,
      errorType: 'overloaded_error',
      eventsSent: events.length,
    });
    // Billed: the words of the deltas generated before the error.
    const words = events
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => (JSON.parse(e.data) as { delta: { text: string } }).delta.text.trim().split(' ').length);
    expect(words.length).toBeGreaterThan(0);
    expect(entry.usage?.output_tokens).toBe(words.reduce((a, b) => a + b, 0));
  });

  it('stream_error through the SDK rejects with the overloaded error', async () => {
    const error = await ctx.client.messages
      .stream(ask('x'), { headers: scenario('stream_error') })
      .finalMessage()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ error: { type: 'error', error: { type: 'overloaded_error' } } });
  });

  it('stream_cut: the socket dies after N events; the ledger keeps what was written', async () => {
    const res = await post(
      ctx.emulator,
      '/v1/messages',
      streamBody(),
      scenario('stream_cut', { 'x-emulator-cut-after': '5' }),
    );
    expect(res.status).toBe(200);
    const error = await res.text().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const entry = await ctx.emulator.ledger.waitFor((e) => e.requestId === res.headers.get('request-id'));
    expect(entry).toMatchObject({ complete: false, eventsSent: 5, status: 200 });
    // message_start, block start, ping and two deltas of four words were written, no message_delta.
    expect(entry.usage).toMatchObject({ output_tokens: 8, input_tokens: expect.any(Number) });
  });

  it('stream_cut through the SDK surfaces a connection error', async () => {
    const error = await ctx.client.messages
      .stream(ask('x'), { headers: scenario('stream_cut') })
      .finalMessage()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(ctx.emulator.ledger.last()).toMatchObject({ complete: false, eventsSent: 4 });
  });
});

describe('timing scenarios', () => {
  it('paced: deltas arrive spaced out; usage matches the number of deltas', async () => {
    const times: number[] = [];
    const stream = ctx.client.messages.stream(ask('Pace'), {
      headers: scenario('paced', { 'x-emulator-deltas': '8', 'x-emulator-interval-ms': '25' }),
    });
    stream.on('text', () => times.push(performance.now()));
    const message = await stream.finalMessage();
    expect(times).toHaveLength(8);
    expect(message.usage.output_tokens).toBe(8);
    const spread = times.at(-1)! - times[0]!;
    expect(spread).toBeGreaterThan(7 * 25 * 0.6);
    expect(spread).toBeLessThan(5_000);
  });

  it('a client abort mid paced stream finalises the entry as incomplete and stops the writer', async () => {
    const controller = new AbortController();
    const stream = ctx.client.messages.stream(ask('Abort me'), {
      headers: scenario('paced', { 'x-emulator-deltas': '32', 'x-emulator-interval-ms': '20' }),
      signal: controller.signal,
    });
    let seen = 0;
    stream.on('text', () => {
      if (++seen === 3) controller.abort();
    });
    await stream.done().catch(() => undefined);
    const entry = await ctx.emulator.ledger.waitFor((e) => e.scenario === 'paced', 2_000);
    expect(entry.complete).toBe(false);
    expect(entry.eventsSent).toBeGreaterThanOrEqual(3 + 3);
    expect(entry.eventsSent).toBeLessThan(38);
    const sent = entry.eventsSent;
    await new Promise((r) => setTimeout(r, 100));
    expect(entry.eventsSent).toBe(sent);
    // One word a delta: the deltas written (all but message_start, block start and ping) are what was billed.
    expect(entry.usage?.output_tokens).toBe(sent - 3);
  });

  it('slow_first_byte: headers wait for x-emulator-delay-ms', async () => {
    const started = performance.now();
    const res = await post(
      ctx.emulator,
      '/v1/messages',
      ask('slow'),
      scenario('slow_first_byte', { 'x-emulator-delay-ms': '150' }),
    );
    expect(res.status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('slow_first_byte: a client that leaves during the wait is recorded as 499, incomplete', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await fetch(`${ctx.emulator.url}/v1/messages`, {
      method: 'POST',
      signal: controller.signal,
      headers: {
        'x-api-key': 'sk-ant-emulator-key',
        ...scenario('slow_first_byte', { 'x-emulator-delay-ms': '5000' }),
      },
      body: JSON.stringify(ask('slow')),
    }).catch(() => undefined);
    const entry = await ctx.emulator.ledger.waitFor((e) => e.status === 499, 2_000);
    expect(entry).toMatchObject({ complete: false, usage: null });
    expect(entry.endedAt! - entry.startedAt).toBeLessThan(2_000);
  });
});
