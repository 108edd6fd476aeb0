import Anthropic from '@anthropic-ai/sdk';
import { freePort } from '../../../services/gateway/test/kit/free-port';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keygate, type Middleware } from '../src/index';
import { clientFor, groupRows, MODEL, startStack, type Stack } from './helpers';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack?.close());

const ask = { model: MODEL, max_tokens: 64, messages: [{ role: 'user' as const, content: 'hello' }] };
const scenario = (name: string, extra: Record<string, string> = {}) => ({
  'x-emulator-scenario': name,
  ...extra,
});

/** The provider misbehaves on the first attempt only: retries go out without the scenario. */
const firstAttemptOnly: Middleware = async (request, next) => {
  if (request.headers.get('x-stainless-retry-count') !== '0') request.headers.delete('x-emulator-scenario');
  return next(request);
};

describe('errors and retries, counted by category, against the real gateway', () => {
  it('429 then success: one call, one rate-limit retry, both attempts in the gateway log', async () => {
    const client = clientFor(stack, { middleware: [firstAttemptOnly] });
    const group = client.group();
    await group.messages.create(ask, { headers: scenario('rate_limit', { 'x-emulator-retry-after': '0' }) });
    expect(client.records).toHaveLength(1);
    expect(client.records[0]).toMatchObject({
      status: 200,
      errorType: null,
      retries: 1,
      retryCategories: ['rate_limit'],
    });
    expect(client.usage.total()).toMatchObject({
      calls: 1,
      errors: { rate_limit: 0 },
      retries: { rate_limit: 1 },
    });
    const rows = await groupRows(stack, group.groupId!);
    expect(rows.map((r) => [r.status, r.retry_count])).toEqual([
      [429, 0],
      [200, 1],
    ]);
  });

  it('429 until retries run out: a rate-limit error and its retries', async () => {
    const client = clientFor(stack, { maxRetries: 1 });
    await expect(
      client.messages.create(ask, { headers: scenario('rate_limit', { 'x-emulator-retry-after': '0' }) }),
    ).rejects.toBeInstanceOf(Anthropic.RateLimitError);
    expect(client.records).toEqual([
      expect.objectContaining({
        status: 429,
        errorType: 'rate_limit_error',
        errorCategory: 'rate_limit',
        retries: 1,
      }),
    ]);
    expect(client.usage.total()).toMatchObject({
      calls: 1,
      errors: { rate_limit: 1 },
      retries: { rate_limit: 1 },
    });
  });

  it('529 overloaded, streamed, until retries run out', async () => {
    const client = clientFor(stack, { maxRetries: 2 });
    await expect(
      client.messages.stream(ask, { headers: scenario('overloaded') }).finalMessage(),
    ).rejects.toBeInstanceOf(Anthropic.APIError);
    expect(client.records).toEqual([
      expect.objectContaining({
        stream: true,
        status: 529,
        errorType: 'overloaded_error',
        retries: 2,
        retryCategories: ['overloaded', 'overloaded'],
      }),
    ]);
    expect(client.usage.total()).toMatchObject({ errors: { overloaded: 1 }, retries: { overloaded: 2 } });
  });

  it('an invalid request is not retried and counts as other', async () => {
    const client = clientFor(stack);
    await expect(
      client.messages.create(ask, { headers: scenario('invalid_request') }),
    ).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    expect(client.records).toEqual([
      expect.objectContaining({
        status: 400,
        errorType: 'invalid_request_error',
        errorCategory: 'other',
        retries: 0,
      }),
    ]);
  });

  it('timeouts: a provider slower than the client timeout, retried, then a timeout error', async () => {
    const client = clientFor(stack, { timeout: 250, maxRetries: 1 });
    await expect(
      client.messages.create(ask, {
        headers: scenario('slow_first_byte', { 'x-emulator-delay-ms': '3000' }),
      }),
    ).rejects.toBeInstanceOf(Anthropic.APIConnectionTimeoutError);
    expect(client.records).toEqual([
      expect.objectContaining({
        status: null,
        errorType: 'timeout',
        errorCategory: 'timeout',
        retries: 1,
        retryCategories: ['timeout'],
      }),
    ]);
    expect(client.usage.total()).toMatchObject({ errors: { timeout: 1 }, retries: { timeout: 1 } });
  });

  it('timeout then success', async () => {
    const client = clientFor(stack, { timeout: 250, maxRetries: 2, middleware: [firstAttemptOnly] });
    await client.messages.create(ask, {
      headers: scenario('slow_first_byte', { 'x-emulator-delay-ms': '3000' }),
    });
    expect(client.records).toEqual([
      expect.objectContaining({ status: 200, retries: 1, retryCategories: ['timeout'] }),
    ]);
  });

  it('connection errors: a gateway that is not there', async () => {
    const port = await freePort();
    const client = new Keygate({ appKey: stack.appKey, baseURL: `http://127.0.0.1:${port}`, maxRetries: 1 });
    await expect(client.messages.create(ask)).rejects.toBeInstanceOf(Anthropic.APIConnectionError);
    expect(client.usage.recent()).toEqual([
      expect.objectContaining({
        status: null,
        errorType: 'connection',
        errorCategory: 'connection',
        retries: 1,
        retryCategories: ['connection'],
      }),
    ]);
    expect(client.usage.total()).toMatchObject({
      calls: 1,
      errors: { connection: 1 },
      retries: { connection: 1 },
    });
  });

  it('a stream the provider cuts: a connection error with the usage that arrived', async () => {
    const client = clientFor(stack);
    await expect(
      client.messages
        .stream(ask, { headers: scenario('stream_cut', { 'x-emulator-cut-after': '3' }) })
        .finalMessage(),
    ).rejects.toThrow();
    const record = client.records[0]!;
    expect(record).toMatchObject({
      stream: true,
      status: 200,
      errorType: 'connection',
      errorCategory: 'connection',
    });
    expect(record.usage?.input_tokens).toBeGreaterThan(0);
  });
});
