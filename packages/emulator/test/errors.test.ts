import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../src/index';
import { ask, KEY, MODEL, post, sdk, useEmulator } from './helpers';

const ctx = useEmulator();
const REQUEST_ID = /^req_01[0-9A-Za-z]{22}$/;

async function errorOf(promise: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Anthropic.APIError);
  return error as InstanceType<typeof Anthropic.APIError>;
}

describe('authentication', () => {
  it('a wrong x-api-key is a 401 in the provider shape, with a request-id header', async () => {
    const res = await post(ctx.emulator, '/v1/messages', ask('hi'), { 'x-api-key': 'sk-ant-wrong' });
    expect(res.status).toBe(401);
    const requestId = res.headers.get('request-id')!;
    expect(requestId).toMatch(REQUEST_ID);
    expect(await res.json()).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: 'invalid x-api-key' },
      request_id: requestId,
    });
    expect(ctx.emulator.ledger.byRequestId(requestId)).toMatchObject({
      status: 401,
      errorType: 'authentication_error',
      complete: true,
    });
  });

  it('Authorization: Bearer without x-api-key is refused, even with the right key', async () => {
    const res = await post(ctx.emulator, '/v1/messages', ask('hi'), {
      'x-api-key': '',
      authorization: `Bearer ${KEY}`,
    });
    expect(res.status).toBe(401);
    // The SDK 1.x on its own sends only Bearer.
    const bare = new Anthropic({ apiKey: KEY, baseURL: ctx.emulator.url, maxRetries: 0 });
    expect(await errorOf(bare.messages.create(ask('hi')))).toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it('apiKey null accepts any non-empty key; acceptBearer takes the SDK as it is', async () => {
    const open = await startEmulator({ apiKey: null });
    const bearer = await startEmulator({ acceptBearer: true });
    try {
      expect((await post(open, '/v1/messages', ask('hi'), { 'x-api-key': 'anything' })).status).toBe(200);
      expect((await post(open, '/v1/messages', ask('hi'), { 'x-api-key': '' })).status).toBe(401);
      const plain = new Anthropic({ apiKey: KEY, baseURL: bearer.url, maxRetries: 0 });
      expect((await plain.messages.create(ask('hi'))).stop_reason).toBe('end_turn');
    } finally {
      await Promise.all([open.close(), bearer.close()]);
    }
  });
});

describe('validation, like the provider', () => {
  it.each([
    ['invalid JSON', '{"model": ', /invalid JSON/],
    ['a missing model', { max_tokens: 10, messages: [] }, /^model: Field required$/],
    [
      'a missing max_tokens',
      { model: MODEL, messages: [{ role: 'user', content: 'x' }] },
      /^max_tokens: Field required$/,
    ],
    ['missing messages', { model: MODEL, max_tokens: 10 }, /^messages: Field required$/],
    [
      'a bad role',
      { model: MODEL, max_tokens: 10, messages: [{ role: 'robot', content: 'x' }] },
      /^messages\.0\.role: Input should be 'user' or 'assistant'$/,
    ],
    [
      'a system message without the per-turn-control beta',
      {
        model: MODEL,
        max_tokens: 10,
        messages: [
          { role: 'user', content: 'x' },
          { role: 'system', content: 'y' },
        ],
      },
      /^messages: Unexpected role "system"\. The Messages API accepts a top-level `system` parameter/,
    ],
    [
      'a thinking budget above max_tokens',
      {
        model: MODEL,
        max_tokens: 1_500,
        thinking: { type: 'enabled', budget_tokens: 2_000 },
        messages: [{ role: 'user', content: 'x' }],
      },
      /max_tokens/,
    ],
    ['an unknown scenario', '__scenario__', /unknown scenario 'nope'/],
  ])('%s is a 400 invalid_request_error', async (_name, body, message) => {
    const headers = body === '__scenario__' ? { 'x-emulator-scenario': 'nope' } : undefined;
    const res = await post(ctx.emulator, '/v1/messages', body === '__scenario__' ? ask('hi') : body, headers);
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: { type: string; message: string }; request_id: string };
    expect(json.error.type).toBe('invalid_request_error');
    expect(json.error.message).toMatch(message);
    expect(json.request_id).toBe(res.headers.get('request-id'));
  });

  it('a body over 32 MB is a 413 request_too_large', async () => {
    const res = await post(ctx.emulator, '/v1/messages', `{"pad":"${'x'.repeat(33 * 1024 * 1024)}"}`);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: { type: 'request_too_large' } });
  });

  it('unknown endpoints are 404 not_found_error', async () => {
    const res = await fetch(`${ctx.emulator.url}/v1/complete`, {
      method: 'POST',
      headers: { 'x-api-key': KEY },
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect(res.headers.get('request-id')).toMatch(REQUEST_ID);
  });

  it('message responses carry rate-limit headers', async () => {
    const res = await post(ctx.emulator, '/v1/messages', ask('hi'));
    expect(res.headers.get('anthropic-ratelimit-requests-limit')).toBe('4000');
    expect(res.headers.get('anthropic-ratelimit-tokens-reset')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });
});

describe('a body that is JSON but not an object', () => {
  it('is a 400 invalid_request_error on the agent, environment and session routes, not a crash', async () => {
    const beta = { 'anthropic-beta': 'managed-agents-2026-04-01' };
    for (const path of ['/v1/agents', '/v1/environments', '/v1/sessions']) {
      for (const body of ['null', '[]', '7', '"agent"']) {
        const res = await post(ctx.emulator, path, body, beta);
        expect(res.status, `${path} ${body}`).toBe(400);
        expect(await res.json()).toMatchObject({
          type: 'error',
          error: { type: 'invalid_request_error', message: 'The request body must be a JSON object.' },
        });
      }
    }
  });
});

describe('error scenarios through the SDK', () => {
  const scenario = (name: string, extra: Record<string, string> = {}) => ({
    headers: { 'x-emulator-scenario': name, ...extra },
  });

  it('rate_limit: 429 RateLimitError with retry-after and x-should-retry', async () => {
    const error = await errorOf(
      ctx.client.messages.create(ask('hi'), scenario('rate_limit', { 'x-emulator-retry-after': '7' })),
    );
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    expect(error.status).toBe(429);
    expect(error.headers?.get('retry-after')).toBe('7');
    expect(error.headers?.get('x-should-retry')).toBe('true');
    expect(error.requestID).toMatch(REQUEST_ID);
    expect(ctx.emulator.ledger.last()).toMatchObject({
      status: 429,
      errorType: 'rate_limit_error',
      scenario: 'rate_limit',
      usage: null,
    });
  });

  it.each([
    ['overloaded', 529, 'overloaded_error', Anthropic.InternalServerError],
    ['api_error', 500, 'api_error', Anthropic.InternalServerError],
    ['invalid_request', 400, 'invalid_request_error', Anthropic.BadRequestError],
  ] as const)('%s: %i %s', async (name, status, type, errorClass) => {
    const error = await errorOf(ctx.client.messages.create(ask('hi'), scenario(name)));
    expect(error).toBeInstanceOf(errorClass);
    expect(error.status).toBe(status);
    expect(error.error).toMatchObject({ type: 'error', error: { type } });
  });

  it('invalid_request has a distinctive message a gateway must pass through', async () => {
    const res = await post(ctx.emulator, '/v1/messages', ask('hi'), {
      'x-emulator-scenario': 'invalid_request',
    });
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
      /must reach the client unchanged/,
    );
  });

  it('error scenarios apply to count_tokens and models too, and a default scenario applies to all', async () => {
    const error = await errorOf(ctx.client.models.list({}, scenario('overloaded')));
    expect(error.status).toBe(529);
    const flaky = await startEmulator({ defaultScenario: 'api_error' });
    try {
      const error2 = await errorOf(
        sdk(flaky).messages.countTokens({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }),
      );
      expect(error2.status).toBe(500);
      expect(flaky.ledger.last()).toMatchObject({ endpoint: 'count_tokens', scenario: 'api_error' });
    } finally {
      await flaky.close();
    }
  });
});
