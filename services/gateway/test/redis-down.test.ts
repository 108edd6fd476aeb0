import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { api, callAt, callModel, startStack, type Stack } from './harness';
import { waitFor } from './kit/wait';

const TOKEN = 'metrics-token-0123456789';

/** A Redis of this test's own on a free port (never the shared one). */
async function ownRedis() {
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
  let running = false;
  return {
    url: `redis://127.0.0.1:${port}`,
    start() {
      execFileSync('redis-server', [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'yes',
      ]);
      running = true;
    },
    stop() {
      if (!running) return;
      running = false;
      execFileSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave']);
    },
  };
}

async function metric(stack: Stack, name: string): Promise<string> {
  const text = await (
    await fetch(`${stack.gateway.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
  ).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(name))
    .join('\n');
}

const until = (check: () => Promise<boolean>, timeout = 10_000) => waitFor(check, { timeout, interval: 50 });

async function keyWithRpm(stack: Stack, rpm: number) {
  const acct = await stack.seedAccount();
  return (
    await api(stack.gateway.url, '/v1/organizations/api_keys', {
      key: acct.adminKey,
      body: { limits: { requests_per_minute: rpm } },
    })
  ).body.key as string;
}

/** An account with one key and one budget; `spentCents` already in its rollups for today. */
async function budgeted(stack: Stack, budget: { hard_cap: boolean; limit_cents: number }, spentCents = 0) {
  const acct = await stack.seedAccount();
  // No rate limits (the plan's defaults would be checked first): only the budget decides.
  const key = (
    await api(stack.gateway.url, '/v1/organizations/api_keys', {
      key: acct.adminKey,
      body: {
        limits: {
          requests_per_minute: null,
          tokens_per_minute: null,
          input_tokens_per_minute: null,
          output_tokens_per_minute: null,
        },
      },
    })
  ).body as { id: string; key: string };
  expect(
    (
      await api(stack.gateway.url, '/v1/organizations/budgets', {
        key: acct.adminKey,
        body: { scope: 'account', period: 'daily', ...budget },
      })
    ).status,
  ).toBe(201);
  // Opus 4.5 output: 400 tokens cost one cent.
  if (spentCents > 0)
    await stack.gateway.store.calls.insertBatch([
      callAt(acct.id, new Date().toISOString(), {
        keyId: key.id,
        usage: { output_tokens: spentCents * 400 },
      }),
    ]);
  return key.key;
}
const oneCent = { 'x-emulator-output-tokens': '400' };

const redisWarnings = (stack: Stack) => stack.logs.filter((l) => /redis unreachable/.test(l));

describe('per-key limits while Redis is down', () => {
  let stack: Stack | undefined;
  let redis: Awaited<ReturnType<typeof ownRedis>> | undefined;
  afterEach(async () => {
    await stack?.close();
    redis?.stop();
    stack = redis = undefined;
  });

  it('open (default): Redis unreachable at start does not stop the gateway; calls are admitted and counted here, then shared again once it is up', async () => {
    redis = await ownRedis();
    stack = await startStack({ REDIS_URL: redis.url, KEYGATE_METRICS_TOKEN: TOKEN });
    expect(redisWarnings(stack)).toHaveLength(1);
    expect(JSON.parse(redisWarnings(stack)[0]!)).toMatchObject({
      level: 'warn',
      msg: expect.stringMatching(/at start.*counted in this instance only/),
    });
    expect(await metric(stack, 'keygate_limits_redis_down')).toBe('keygate_limits_redis_down 1');
    expect(await metric(stack, 'keygate_limits_on_redis_down{mode="open"}')).toBe(
      'keygate_limits_on_redis_down{mode="open"} 1',
    );
    // Counted locally: the limit still holds in this instance.
    const key = await keyWithRpm(stack, 2);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await callModel(stack.gateway.url, key)).status);
    expect(statuses).toEqual([200, 200, 429]);
    // Reconnection attempts are not logged again, and nothing ended the process.
    await new Promise((r) => setTimeout(r, 700));
    expect(redisWarnings(stack)).toHaveLength(1);

    redis.start();
    await until(
      async () => (await metric(stack!, 'keygate_limits_redis_down')) === 'keygate_limits_redis_down 0',
    );
    const shared = await keyWithRpm(stack, 1);
    expect((await callModel(stack.gateway.url, shared)).status).toBe(200);
    expect((await callModel(stack.gateway.url, shared)).status).toBe(429);
    const keys = execFileSync('redis-cli', ['-u', redis.url, '--scan', '--pattern', 'keygate:rpm:*'])
      .toString()
      .trim()
      .split('\n');
    expect(keys.length).toBeGreaterThanOrEqual(1);

    // Down again mid-run: one warning for the outage, calls still served.
    redis.stop();
    const later = await keyWithRpm(stack, 5);
    expect((await callModel(stack.gateway.url, later)).status).toBe(200);
    await until(
      async () => (await metric(stack!, 'keygate_limits_redis_down')) === 'keygate_limits_redis_down 1',
    );
    expect(redisWarnings(stack)).toHaveLength(2);
  });

  it('closed: calls of keys with limits get 429 in the provider shape with a clear message; keys without limits are served', async () => {
    redis = await ownRedis();
    redis.start();
    stack = await startStack({
      REDIS_URL: redis.url,
      KEYGATE_LIMITS_ON_REDIS_DOWN: 'closed',
      KEYGATE_METRICS_TOKEN: TOKEN,
    });
    expect(redisWarnings(stack)).toHaveLength(0);
    const key = await keyWithRpm(stack, 100);
    expect((await callModel(stack.gateway.url, key)).status).toBe(200);
    expect(await metric(stack, 'keygate_limits_on_redis_down{mode="closed"}')).toBe(
      'keygate_limits_on_redis_down{mode="closed"} 1',
    );

    redis.stop();
    await until(
      async () => (await metric(stack!, 'keygate_limits_redis_down')) === 'keygate_limits_redis_down 1',
    );
    const res = await callModel(stack.gateway.url, key);
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({
      type: 'error',
      error: {
        type: 'rate_limit_error',
        message: expect.stringMatching(/limit store \(Redis\) is unreachable/),
      },
    });
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.headers.get('request-id')).toBe(res.body.request_id);
    expect((await callModel(stack.gateway.url, stack.appKey)).status).toBe(200);
    const spendCapped = (
      await api(stack.gateway.url, '/v1/organizations/api_keys', {
        key: (await stack.seedAccount()).adminKey,
        body: { limits: { monthly_spend_cap_cents: 10_000 } },
      })
    ).body.key;
    expect((await callModel(stack.gateway.url, spendCapped)).status).toBe(429);
    expect(redisWarnings(stack)).toHaveLength(1);
    expect(JSON.parse(redisWarnings(stack)[0]!).msg).toMatch(/refused with 429/);

    redis.start();
    await until(async () => (await callModel(stack!.gateway.url, key)).status === 200);
    expect(await metric(stack, 'keygate_limits_redis_down')).toBe('keygate_limits_redis_down 0');
  });

  it('open: budgets are seeded from the rollups and counted in this instance, so a hard cap still holds', async () => {
    redis = await ownRedis();
    stack = await startStack({ REDIS_URL: redis.url });
    // 98 cents spent: room for a call's ceiling (about a cent), not for many.
    const key = await budgeted(stack, { hard_cap: true, limit_cents: 100 }, 98);
    expect((await callModel(stack.gateway.url, key, oneCent)).status).toBe(200);
    await until(async () => (await callModel(stack!.gateway.url, key)).status === 429);
    const res = await callModel(stack.gateway.url, key);
    expect(res.body.error.message).toMatch(/daily budget .* of \$1\.00/);
    expect(res.headers.get('x-should-retry')).toBe('false');
  });

  it('closed: calls under a hard-capped budget are refused; soft budgets only alert, so their calls are counted here and served', async () => {
    redis = await ownRedis();
    stack = await startStack({ REDIS_URL: redis.url, KEYGATE_LIMITS_ON_REDIS_DOWN: 'closed' });
    const hard = await budgeted(stack, { hard_cap: true, limit_cents: 10_000 });
    const res = await callModel(stack.gateway.url, hard);
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({
      type: 'error',
      error: {
        type: 'rate_limit_error',
        message: expect.stringMatching(/hard-capped budget .* limit store \(Redis\) is unreachable/),
      },
    });
    expect(res.headers.get('retry-after')).toBe('5');
    const soft = await budgeted(stack, { hard_cap: false, limit_cents: 100 }, 99);
    for (let i = 0; i < 3; i++) expect((await callModel(stack.gateway.url, soft, oneCent)).status).toBe(200);
    expect((await callModel(stack.gateway.url, stack.appKey)).status).toBe(200);
  });
});
