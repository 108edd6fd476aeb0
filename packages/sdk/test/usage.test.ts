import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeUsage } from '../src/index';
import { clientFor, expectedColumns, groupRows, MODEL, startStack, summed, type Stack } from './helpers';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

const ask = (content = 'Hello through Keygate') => ({
  model: MODEL,
  max_tokens: 256,
  messages: [{ role: 'user' as const, content }],
});

async function rowById(id: string | null) {
  const row = (await stack.calls()).find((r) => r.id === id);
  expect(row, `call row ${id}`).toBeDefined();
  return row!;
}

describe('usage reported by onUsage equals what the provider served (the emulator ledger)', () => {
  it('non-streaming', async () => {
    const client = clientFor(stack);
    const msg = await client.messages.create(ask());
    const entry = stack.emulator.ledger.find(msg.id)!;
    expect(client.records).toHaveLength(1);
    const record = client.records[0]!;
    expect(record.providerUsage).toEqual(entry.usage);
    expect(record.usage).toEqual(normalizeUsage(entry.usage as never));
    expect(record).toMatchObject({
      requestId: entry.requestId,
      messageId: msg.id,
      model: msg.model,
      stream: false,
      status: 200,
      errorType: null,
      retries: 0,
    });
    expect(await rowById(record.gatewayRequestId)).toMatchObject({
      ...expectedColumns(entry.usage!),
      upstream_request_id: entry.requestId,
      stream: false,
    });
  });

  it('streaming: finalMessage() is unchanged and the record equals the ledger', async () => {
    const client = clientFor(stack);
    const msg = await client.messages.stream(ask('Stream a reply')).finalMessage();
    const entry = await stack.emulator.ledger.waitFor((e) => e.messageId === msg.id, 2_000);
    expect(msg.usage).toEqual(entry.usage);
    expect(client.records[0]!.providerUsage).toEqual(entry.usage);
    expect(client.records[0]).toMatchObject({
      stream: true,
      status: 200,
      errorType: null,
      messageId: msg.id,
      stopReason: msg.stop_reason,
    });
    expect(await rowById(client.records[0]!.gatewayRequestId)).toMatchObject({
      ...expectedColumns(entry.usage!),
      stream: true,
      partial: false,
    });
  });

  it.each(['multi_delta', 'cache_write_5m', 'cache_write_1h', 'thinking', 'multi_delta,cache_write_1h'])(
    'scenario %s, streamed and not',
    async (scenario) => {
      const client = clientFor(stack, { defaultHeaders: { 'x-emulator-scenario': scenario } });
      const plain = await client.messages.create(ask(`plain ${scenario}`));
      const streamed = await client.messages.stream(ask(`streamed ${scenario}`)).finalMessage();
      for (const msg of [plain, streamed]) {
        const entry = await stack.emulator.ledger.waitFor((e) => e.messageId === msg.id, 2_000);
        const record = client.records.find((r) => r.messageId === msg.id)!;
        expect(record.providerUsage).toEqual(entry.usage);
        expect(record.usage).toEqual(normalizeUsage(entry.usage as never));
      }
      const total = client.usage.total();
      expect(total.calls).toBe(2);
      expect(total.output_tokens).toBe(plain.usage.output_tokens + streamed.usage.output_tokens);
      if (scenario.includes('cache_write_1h'))
        expect(total.cache_creation.ephemeral_1h_input_tokens).toBeGreaterThan(0);
    },
  );

  it('events are not held back: deltas paced by the provider reach the app paced', async () => {
    const client = clientFor(stack, {
      defaultHeaders: {
        'x-emulator-scenario': 'paced',
        'x-emulator-interval-ms': '40',
        'x-emulator-deltas': '6',
      },
    });
    const arrivals: Array<[string, number]> = [];
    const start = performance.now();
    const stream = client.messages.stream(ask('pace me'));
    for await (const event of stream) arrivals.push([event.type, performance.now() - start]);
    const deltas = arrivals.filter(([type]) => type === 'content_block_delta').map(([, t]) => t);
    expect(deltas.length).toBeGreaterThanOrEqual(6);
    expect(deltas.at(-1)! - deltas[0]!).toBeGreaterThan(150);
    expect(client.records).toHaveLength(1);
    expect((await stream.finalMessage()).usage).toEqual(client.records[0]!.providerUsage);
  });

  it('an error event after HTTP 200: the error type and the usage sent before it, as the gateway recorded them', async () => {
    const client = clientFor(stack, { defaultHeaders: { 'x-emulator-scenario': 'stream_error' } });
    await expect(client.messages.stream(ask('fail midway')).finalMessage()).rejects.toThrow();
    const record = client.records[0]!;
    expect(record).toMatchObject({ status: 200, errorType: 'overloaded_error', errorCategory: 'overloaded' });
    const entry = stack.emulator.ledger.byRequestId(record.requestId!)!;
    // As received: message_start's count; the ledger bills the words generated before the error.
    expect(record.providerUsage).toEqual({ ...entry.usage, output_tokens: 1 });
    expect(record.estimated).toBe(true);
    expect(record.usage!.output_tokens).toBeGreaterThan(1);
    expect(await rowById(record.gatewayRequestId)).toMatchObject({
      error_type: 'overloaded_error',
      estimated: true,
      output_tokens: record.usage!.output_tokens,
    });
    expect(client.usage.total().errors.overloaded).toBe(1);
  });

  it('an app that aborts a stream: onUsage gets the estimate the gateway recorded', async () => {
    const client = clientFor(stack, {
      defaultHeaders: {
        'x-emulator-scenario': 'paced',
        'x-emulator-interval-ms': '30',
        'x-emulator-deltas': '40',
      },
    });
    const controller = new AbortController();
    const stream = client.messages.stream(ask('abort me halfway'), { signal: controller.signal });
    let texts = 0;
    stream.on('text', () => {
      if (++texts === 5) controller.abort();
    });
    await stream.done().catch(() => undefined);
    await expect.poll(() => client.records.length).toBe(1);
    const record = client.records[0]!;
    expect(record).toMatchObject({
      errorType: 'aborted',
      estimated: true,
      providerUsage: expect.objectContaining({ output_tokens: 1 }),
    });
    expect(record.usage!.output_tokens).toBeGreaterThan(1);
    // The gateway records the call once the upstream answered its abort.
    await expect
      .poll(async () => (await stack.calls()).some((r) => r.id === record.gatewayRequestId), {
        timeout: 5_000,
      })
      .toBe(true);
    const row = await rowById(record.gatewayRequestId);
    expect(row).toMatchObject({ estimated: true, error_type: 'client_closed' });
    // The gateway may have forwarded a delta the app never read; never less than the app saw.
    expect(row.output_tokens).toBeGreaterThanOrEqual(record.usage!.output_tokens);
  });
});

describe('request groups', () => {
  it('every call of a group carries its id; the group totals equal the gateway rows', async () => {
    const client = clientFor(stack);
    const group = client.group();
    await group.messages.create(ask('one'));
    await group.messages.stream(ask('two')).finalMessage();
    await group.messages.countTokens({ model: MODEL, messages: ask('three').messages });
    await client.messages.create(ask('not in the group'));
    const rows = await groupRows(stack, group.groupId!);
    expect(rows.map((r) => r.endpoint)).toEqual(['messages', 'messages', 'count_tokens']);
    expect(client.usage.group(group.groupId!)).toMatchObject(summed(rows));
    expect(client.usage.total().calls).toBe(4);
  });

  it("Claude Code's session id counts as the group when no group id is sent", async () => {
    const client = clientFor(stack, { defaultHeaders: { 'x-claude-code-session-id': 'session-abc' } });
    await client.beta.messages.create(ask('from claude code'));
    expect(client.records[0]).toMatchObject({ groupId: 'session-abc', endpoint: 'messages' });
    expect((await groupRows(stack, 'session-abc')).length).toBe(1);
  });
});
