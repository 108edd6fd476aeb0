import { afterEach, describe, expect, it } from 'vitest';
import { api, callModel, PROVIDER_KEY, startStack, type Stack } from './harness';

const TOKEN = 'metrics-token-0123456789';

const scrape = (url: string, headers: Record<string, string> = {}) =>
  fetch(`${url}/metrics`, { headers }).then(async (r) => ({
    status: r.status,
    headers: r.headers,
    text: await r.text(),
  }));

function expectProviderError(
  res: { status: number; headers: Headers; text: string },
  status: number,
  type: string,
) {
  expect(res.status).toBe(status);
  const body = JSON.parse(res.text);
  expect(body).toMatchObject({ type: 'error', error: { type }, request_id: expect.stringMatching(/^req_/) });
  expect(res.headers.get('request-id')).toBe(body.request_id);
}

describe('who may read /metrics', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('with KEYGATE_METRICS_TOKEN: only its bearer, refused in the provider shape otherwise; other credentials do not open it', async () => {
    stack = await startStack({ KEYGATE_METRICS_TOKEN: TOKEN });
    expectProviderError(await scrape(stack.gateway.url), 401, 'authentication_error');
    expectProviderError(
      await scrape(stack.gateway.url, { authorization: `Bearer ${TOKEN}x` }),
      401,
      'authentication_error',
    );
    expectProviderError(
      await scrape(stack.gateway.url, { authorization: `Bearer ${stack.config.operatorToken}` }),
      401,
      'authentication_error',
    );
    expectProviderError(
      await scrape(stack.gateway.url, { authorization: `Bearer ${stack.appKey}` }),
      401,
      'authentication_error',
    );
    const ok = await scrape(stack.gateway.url, { authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('# TYPE keygate_calls_total counter');
    expect(stack.gateway.metricsPort).toBeNull();
  });

  it('without token or port: metrics are off and /metrics is not found', async () => {
    stack = await startStack();
    expect(stack.gateway.metrics).toBeNull();
    expectProviderError(
      await scrape(stack.gateway.url, { authorization: `Bearer ${TOKEN}` }),
      404,
      'not_found_error',
    );
  });

  it('with KEYGATE_METRICS_PORT only: served on that port, not on the gateway port', async () => {
    stack = await startStack({ KEYGATE_METRICS_PORT: '0' });
    await callModel(stack.gateway.url, stack.appKey);
    const port = stack.gateway.metricsPort!;
    expect(port).toBeGreaterThan(0);
    const res = await scrape(`http://127.0.0.1:${port}`);
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/^keygate_calls_total\{.*status_class="2xx"\} 1$/m);
    expectProviderError(await scrape(stack.gateway.url), 404, 'not_found_error');
    const other = await fetch(`http://127.0.0.1:${port}/v1/messages`).then(async (r) => ({
      status: r.status,
      headers: r.headers,
      text: await r.text(),
    }));
    expectProviderError(other, 404, 'not_found_error');
  });

  it('with both: the metrics port asks for the token too', async () => {
    stack = await startStack({ KEYGATE_METRICS_PORT: '0', KEYGATE_METRICS_TOKEN: TOKEN });
    const base = `http://127.0.0.1:${stack.gateway.metricsPort}`;
    expectProviderError(await scrape(base), 401, 'authentication_error');
    expect((await scrape(base, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
  });
});

describe('access lines', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('one info line per call with its request id, figures and no secret; every line about a request names it', async () => {
    stack = await startStack({ KEYGATE_METRICS_TOKEN: TOKEN });
    const url = stack.gateway.url;
    const answers = [
      await callModel(url, stack.appKey),
      await callModel(url, stack.appKey, {
        'x-emulator-scenario': 'overloaded',
        'x-stainless-retry-count': '2',
      }),
      await api(url, '/v1/messages', { bearer: stack.appKey, body: { model: 'claude-opus-4-5' } }),
      await api(url, '/v1/messages', { bearer: `${stack.appKey}nope`, body: { model: 'claude-opus-4-5' } }),
      await api(url, '/v1/messages', {
        headers: { 'x-api-key': PROVIDER_KEY },
        body: { model: 'claude-opus-4-5' },
      }),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 529, 400, 401, 401]);
    const lines = stack.logs.map((l) => JSON.parse(l) as Record<string, any>);
    const access = lines.filter((l) => l.msg === 'access' && l.path === '/v1/messages');
    expect(access).toHaveLength(answers.length);
    for (const [i, a] of answers.entries()) {
      const line = access[i]!;
      expect(line.level).toBe('info');
      // A proxied answer carries the provider's request-id and the gateway's own beside it.
      expect(line.requestId).toBe(a.headers.get('keygate-request-id') ?? a.headers.get('request-id'));
      expect(line).toMatchObject({ method: 'POST', path: '/v1/messages', status: a.status });
      expect(line.latencyMs).toBeGreaterThanOrEqual(0);
    }
    expect(access[0]).toMatchObject({
      accountId: stack.account.id,
      keyId: stack.keyId,
      model: 'claude-opus-4-5',
      errorType: null,
      tokens: { input: expect.any(Number), output: answers[0]!.body.usage.output_tokens },
    });
    expect(access[0]!.upstreamRequestId).toBe(answers[0]!.headers.get('request-id'));
    expect(access[0]!.ttfbMs).toBeGreaterThan(0);
    expect(access[1]).toMatchObject({ errorType: 'overloaded_error', retryCount: 2, tokens: null });
    expect(access[2]).toMatchObject({ errorType: 'invalid_request_error', keyId: stack.keyId });
    // Refused before a key was known: no call record, the line still says what happened.
    expect(access[3]).not.toHaveProperty('keyId');
    const requestIds = new Set(
      answers.map((a) => a.headers.get('keygate-request-id') ?? a.headers.get('request-id')),
    );
    const aboutRequests = lines.filter((l) => l.requestId !== undefined);
    expect(aboutRequests.length).toBeGreaterThanOrEqual(answers.length);
    for (const l of aboutRequests) expect(l.requestId).toMatch(/^req_/);
    expect([...requestIds].every((id) => aboutRequests.some((l) => l.requestId === id))).toBe(true);
    const all = stack.logs.join('');
    for (const secret of [stack.appKey, PROVIDER_KEY, TOKEN, stack.appKey.slice(8)])
      expect(all).not.toContain(secret);
  });
});
