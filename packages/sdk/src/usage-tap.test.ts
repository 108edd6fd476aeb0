import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it, vi } from 'vitest';
import {
  controlledStream,
  errorBody,
  fakeFetch,
  frame,
  hang,
  json,
  message,
  sseResponse,
  textStreamFrames,
  unitClient,
  USAGE,
} from './test-support';
import { normalizeUsage, type UsageRecord } from './usage-types';

const MODEL = 'claude-opus-4-5';
const params = { model: MODEL, max_tokens: 64, messages: [{ role: 'user' as const, content: 'hi' }] };
const soon = { 'retry-after-ms': '1' };

function recorder() {
  const records: UsageRecord[] = [];
  return { records, onUsage: (r: UsageRecord) => void records.push(r) };
}

describe('non-streaming calls', () => {
  it('one record with the usage, ids and status; the app gets the response untouched', async () => {
    const body = message('Hello');
    const { fetch } = fakeFetch(() =>
      json(body, 200, { 'request-id': 'req_up', 'keygate-request-id': 'req_gw' }),
    );
    const { records, onUsage } = recorder();
    const client = unitClient(fetch, { onUsage });
    const { data, response } = await client.group('g1').messages.create(params).withResponse();
    expect(data).toEqual(body);
    expect(response.headers.get('request-id')).toBe('req_up');
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      requestId: 'req_up',
      gatewayRequestId: 'req_gw',
      groupId: 'g1',
      endpoint: 'messages',
      method: 'POST',
      model: MODEL,
      messageId: body.id,
      stream: false,
      status: 200,
      errorType: null,
      errorCategory: null,
      stopReason: 'end_turn',
      usage: normalizeUsage(USAGE),
      providerUsage: USAGE,
      retries: 0,
      retryCategories: [],
    });
    expect(records[0]!.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it('count_tokens and models are calls too, without token usage', async () => {
    const { fetch } = fakeFetch((req) =>
      req.url.includes('count_tokens')
        ? json({ input_tokens: 12 })
        : json({
            data: [{ type: 'model', id: MODEL, display_name: 'x', created_at: '2025-01-01T00:00:00Z' }],
            has_more: false,
            first_id: MODEL,
            last_id: MODEL,
          }),
    );
    const client = unitClient(fetch);
    await client.messages.countTokens({ model: MODEL, messages: params.messages });
    await client.models.list();
    expect(client.usage.recent().map((r) => [r.endpoint, r.method, r.usage])).toEqual([
      ['count_tokens', 'POST', null],
      ['models', 'GET', null],
    ]);
    expect(client.usage.total()).toMatchObject({ calls: 2, input_tokens: 0 });
  });

  it('an onUsage that throws is logged, and the call still succeeds', async () => {
    const logger = { warn: vi.fn(), error: vi.fn(), info: vi.fn(), debug: vi.fn() };
    const client = unitClient(fakeFetch(() => json(message('x'))).fetch, {
      logger,
      onUsage: () => {
        throw new Error('hook bug');
      },
    });
    await expect(client.messages.create(params)).resolves.toMatchObject({ type: 'message' });
    expect(logger.warn).toHaveBeenCalledWith(expect.stringMatching(/onUsage threw/), expect.any(Error));
  });
});

describe('streams', () => {
  it('events reach the app as they arrive; the record comes once the stream ends', async () => {
    let stream!: ReturnType<typeof controlledStream>;
    const { fetch } = fakeFetch((_req, _i, signal) => (stream = controlledStream(signal)).response);
    const { records, onUsage } = recorder();
    const client = unitClient(fetch, { onUsage });
    const frames = textStreamFrames();
    const events = await client.messages.create({ ...params, stream: true });
    const iterator = events[Symbol.asyncIterator]();
    stream.write(frames[0]!);
    expect((await iterator.next()).value).toMatchObject({ type: 'message_start' });
    stream.write(frames[1]!);
    expect((await iterator.next()).value).toMatchObject({ type: 'content_block_start' });
    expect(records).toHaveLength(0);
    for (const f of frames.slice(2)) stream.write(f);
    stream.close();
    const rest: string[] = [];
    for (let r = await iterator.next(); !r.done; r = await iterator.next()) rest.push(r.value.type);
    expect(rest).toEqual([
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_delta',
      'message_stop',
    ]);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      stream: true,
      status: 200,
      errorType: null,
      stopReason: 'end_turn',
      usage: normalizeUsage(USAGE),
      providerUsage: USAGE,
    });
  });

  it('messages.stream(): finalMessage() still works and its usage equals the record', async () => {
    const { fetch, sent } = fakeFetch(() => sseResponse(textStreamFrames('Streamed text')));
    const { records, onUsage } = recorder();
    const client = unitClient(fetch, { onUsage });
    const final = await client.messages.stream(params).finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'Streamed text' }]);
    expect(records[0]!.providerUsage).toEqual(final.usage);
    expect(sent[0]!.headers.get('x-stainless-helper-method')).toBe('stream');
  });

  it("an error event after HTTP 200 is the call's error, with the usage seen before it", async () => {
    const frames = [...textStreamFrames().slice(0, 3), frame('error', errorBody('overloaded_error'))];
    const client = unitClient(fakeFetch(() => sseResponse(frames)).fetch);
    await expect(client.messages.stream(params).finalMessage()).rejects.toThrow(/Overloaded|overloaded/i);
    expect(client.usage.recent()[0]).toMatchObject({
      status: 200,
      errorType: 'overloaded_error',
      errorCategory: 'overloaded',
      usage: { output_tokens: 1 },
    });
    expect(client.usage.total().errors.overloaded).toBe(1);
  });

  it('a stream that ends before message_stop is a connection error', async () => {
    const client = unitClient(fakeFetch(() => sseResponse(textStreamFrames().slice(0, 5))).fetch);
    await client.messages
      .stream(params)
      .finalMessage()
      .catch(() => null);
    expect(client.usage.recent()[0]).toMatchObject({ errorType: 'connection', errorCategory: 'connection' });
  });

  it('the app breaking out of a stream is recorded as aborted, not as an error', async () => {
    const frames = textStreamFrames();
    const { fetch } = fakeFetch((_req, _i, signal) => {
      const s = controlledStream(signal);
      s.write(frames[0]! + frames[1]!);
      return s.response;
    });
    const client = unitClient(fetch);
    const events = await client.messages.create({ ...params, stream: true });
    for await (const event of events) if (event.type === 'content_block_start') break;
    await vi.waitFor(() => expect(client.usage.recent()).toHaveLength(1));
    expect(client.usage.recent()[0]).toMatchObject({
      errorType: 'aborted',
      errorCategory: null,
      usage: { input_tokens: USAGE.input_tokens },
    });
    expect(Object.values(client.usage.total().errors).every((n) => n === 0)).toBe(true);
  });
});

describe('errors and retries', () => {
  it('a 429 and a 529 retried to success: one record, two retries by category', async () => {
    const replies = [
      json(errorBody('rate_limit_error'), 429, soon),
      json(errorBody('overloaded_error'), 529, soon),
      json(message('ok')),
    ];
    const { fetch, sent } = fakeFetch((_r, i) => replies[i]!);
    const { records, onUsage } = recorder();
    const client = unitClient(fetch, { onUsage });
    await client.messages.create(params);
    expect(sent.map((r) => r.headers.get('x-stainless-retry-count'))).toEqual(['0', '1', '2']);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      status: 200,
      errorType: null,
      retries: 2,
      retryCategories: ['rate_limit', 'overloaded'],
    });
    expect(client.usage.total()).toMatchObject({
      calls: 1,
      errors: { rate_limit: 0, overloaded: 0 },
      retries: { rate_limit: 1, overloaded: 1 },
    });
  });

  it('retries exhausted: the last error is the record', async () => {
    const client = unitClient(fakeFetch(() => json(errorBody('overloaded_error'), 529, soon)).fetch, {
      maxRetries: 1,
    });
    await expect(client.messages.create(params)).rejects.toBeInstanceOf(Anthropic.APIError);
    expect(client.usage.recent()).toEqual([
      expect.objectContaining({
        status: 529,
        errorType: 'overloaded_error',
        errorCategory: 'overloaded',
        retries: 1,
        retryCategories: ['overloaded'],
      }),
    ]);
    expect(client.usage.total()).toMatchObject({
      calls: 1,
      errors: { overloaded: 1 },
      retries: { overloaded: 1 },
    });
  });

  it('errors the SDK does not retry are recorded at once (400, and x-should-retry: false)', async () => {
    const replies = [
      json(errorBody('invalid_request_error'), 400),
      json(errorBody('rate_limit_error'), 429, { 'x-should-retry': 'false' }),
    ];
    const client = unitClient(fakeFetch((_r, i) => replies[i]!).fetch);
    await expect(client.messages.create(params)).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    await expect(client.messages.create(params)).rejects.toBeInstanceOf(Anthropic.RateLimitError);
    expect(client.usage.recent().map((r) => [r.status, r.errorCategory, r.retries])).toEqual([
      [400, 'other', 0],
      [429, 'rate_limit', 0],
    ]);
  });

  it('timeouts: retried, then recorded without a status', async () => {
    const { fetch, sent } = fakeFetch((_r, _i, signal) => hang(signal));
    const client = unitClient(fetch, { timeout: 30, maxRetries: 1 });
    await expect(client.messages.create(params)).rejects.toBeInstanceOf(Anthropic.APIConnectionTimeoutError);
    expect(sent).toHaveLength(2);
    expect(client.usage.recent()).toEqual([
      expect.objectContaining({
        status: null,
        errorType: 'timeout',
        errorCategory: 'timeout',
        retries: 1,
        retryCategories: ['timeout'],
      }),
    ]);
  });

  it('connection errors: retried, then recorded', async () => {
    const { fetch } = fakeFetch(() => {
      throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:9') });
    });
    const client = unitClient(fetch, { maxRetries: 1 });
    await expect(client.messages.create(params)).rejects.toBeInstanceOf(Anthropic.APIConnectionError);
    expect(client.usage.total()).toMatchObject({
      calls: 1,
      errors: { connection: 1 },
      retries: { connection: 1 },
    });
  });

  it('aborted while the SDK waits to retry: recorded as aborted, with the last status', async () => {
    const controller = new AbortController();
    const client = unitClient(
      fakeFetch(() => json(errorBody('overloaded_error'), 529, { 'retry-after-ms': '5000' })).fetch,
    );
    const call = client.messages.create(params, { signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    await expect(call).rejects.toBeInstanceOf(Anthropic.APIUserAbortError);
    expect(client.usage.recent()).toEqual([
      expect.objectContaining({ status: 529, errorType: 'aborted', errorCategory: null, retries: 0 }),
    ]);
  });

  it('a request the app aborts is recorded as aborted', async () => {
    const controller = new AbortController();
    const client = unitClient(fakeFetch((_r, _i, signal) => hang(signal)).fetch);
    const call = client.messages.create(params, { signal: controller.signal });
    setTimeout(() => controller.abort(), 5);
    await expect(call).rejects.toBeInstanceOf(Anthropic.APIUserAbortError);
    expect(client.usage.recent()[0]).toMatchObject({ errorType: 'aborted', errorCategory: null, retries: 0 });
  });
});
