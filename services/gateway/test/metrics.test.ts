import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, callModel, PROVIDER_KEY, startStack, type Stack } from './harness';
import { waitFor } from './kit/wait';

const TOKEN = 'metrics-token-0123456789';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition. */
function parse(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!m) throw new Error(`not a sample line: ${line}`);
      const labels = Object.fromEntries(
        [...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]),
      );
      return { name: m[1]!, labels, value: Number(m[3]) };
    });
}

const sum = (samples: Sample[], name: string, where: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);

async function scrape(url: string, token: string | null = TOKEN) {
  const res = await fetch(`${url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  return { status: res.status, headers: res.headers, text: await res.text() };
}

function stream(base: string, key: string, headers: Record<string, string> = {}) {
  return fetch(`${base}/v1/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 16,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    }),
  }).then(async (r) => ({ status: r.status, text: await r.text() }));
}

describe('/metrics after a known workload', () => {
  let stack: Stack;
  let samples: Sample[];
  const made = { a: 0, b: 0, c: 0 };
  const keys: string[] = [];
  const keyIds: string[] = [];

  beforeAll(async () => {
    stack = await startStack({ KEYGATE_METRICS_TOKEN: TOKEN, KEYGATE_METRICS_MAX_ACCOUNTS: '2' });
    const url = stack.gateway.url;
    keys.push(stack.appKey);
    keyIds.push(stack.keyId);
    const others = [await stack.seedAccount(), await stack.seedAccount()];
    const otherKeys = [];
    for (const acct of others) {
      const k = (await api(url, '/v1/organizations/api_keys', { key: acct.adminKey, body: {} })).body as {
        id: string;
        key: string;
      };
      keys.push(k.key);
      keyIds.push(k.id, acct.adminKeyId);
      otherKeys.push(k.key);
    }
    const expectStatus = async (p: Promise<{ status: number }>, status: number) =>
      expect((await p).status).toBe(status);
    // Account A: 3 plain calls (one a retry), 2 streams (one reading the cache), an overloaded
    // and a rate-limited answer from upstream, a body the gateway refuses, and a model id shaped like a key.
    await expectStatus(callModel(url, stack.appKey), 200);
    await expectStatus(callModel(url, stack.appKey), 200);
    await expectStatus(callModel(url, stack.appKey, { 'x-stainless-retry-count': '1' }), 200);
    await expectStatus(stream(url, stack.appKey), 200);
    await expectStatus(stream(url, stack.appKey, { 'x-emulator-scenario': 'cache_read' }), 200);
    await expectStatus(callModel(url, stack.appKey, { 'x-emulator-scenario': 'overloaded' }), 529);
    await expectStatus(callModel(url, stack.appKey, { 'x-emulator-scenario': 'rate_limit' }), 429);
    await expectStatus(
      api(url, '/v1/messages', {
        bearer: stack.appKey,
        body: { model: 'claude-opus-4-5', messages: 'not an array' },
      }),
      400,
    );
    const secretModel = `kg_live_${'Q'.repeat(40)}`;
    await api(url, '/v1/messages', {
      bearer: stack.appKey,
      body: { model: secretModel, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] },
    });
    made.a = 9;
    // Accounts B and C: two calls each; C is past the cap of 2 accounts.
    for (const [i, key] of otherKeys.entries()) {
      await expectStatus(callModel(url, key), 200);
      await expectStatus(stream(url, key), 200);
      made[i === 0 ? 'b' : 'c'] = 2;
    }
    const res = await scrape(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    samples = parse(res.text);
  });
  afterAll(() => stack?.close());

  it('counts every call once, by account (capped at 2, the rest as other) and model', async () => {
    const accountLabels = new Set(
      samples.filter((s) => s.name === 'keygate_calls_total').map((s) => s.labels.account),
    );
    expect(accountLabels).toEqual(new Set([stack.account.id, expect.any(String), 'other']));
    expect(accountLabels.size).toBe(3);
    expect(sum(samples, 'keygate_calls_total')).toBe(made.a + made.b + made.c);
    expect(sum(samples, 'keygate_calls_total', { account: stack.account.id })).toBe(made.a);
    expect(sum(samples, 'keygate_calls_total', { account: 'other' })).toBe(made.c);
    expect(
      sum(samples, 'keygate_calls_total', {
        account: stack.account.id,
        model: 'claude-sonnet-4-5',
        endpoint: 'messages',
        status_class: '2xx',
      }),
    ).toBe(2);
    expect(sum(samples, 'keygate_retried_calls_total')).toBe(1);
  });

  it('errors by category, retries and histograms match the calls made', () => {
    expect(sum(samples, 'keygate_call_errors_total', { category: 'overloaded' })).toBe(1);
    expect(sum(samples, 'keygate_call_errors_total', { category: 'rate_limit' })).toBe(1);
    expect(sum(samples, 'keygate_call_errors_total', { category: 'refused' })).toBeGreaterThanOrEqual(1);
    expect(sum(samples, 'keygate_call_errors_total', { category: 'client_gone' })).toBe(0);
    // Upstream answered everything but the refused body: 5 + 2 + 2 of A's, B's and C's successes, the 529 and the 429 (and the odd model's answer).
    const answered = sum(samples, 'keygate_upstream_latency_seconds_count');
    expect(answered).toBeGreaterThanOrEqual(11);
    expect(answered).toBeLessThanOrEqual(12);
    expect(sum(samples, 'keygate_upstream_ttfb_seconds_count', { stream: 'true' })).toBe(4);
    expect(sum(samples, 'keygate_key_cache_lookups_total', { result: 'miss' })).toBeGreaterThanOrEqual(3);
    expect(sum(samples, 'keygate_key_cache_lookups_total', { result: 'hit' })).toBeGreaterThanOrEqual(
      made.a - 1,
    );
  });

  it('tokens by type and cost equal the call log', async () => {
    await stack.gateway.writer.flush();
    const sql = stack.gateway.store.db.sql;
    const [row] = await sql<Record<string, number>[]>`
      select sum(input_tokens)::int as input, sum(output_tokens)::int as output, sum(cache_read_input_tokens)::int as cache_read,
             sum(cache_creation_5m_tokens)::int as cache_write_5m, sum(cache_creation_1h_tokens)::int as cache_write_1h, count(*)::int as calls
      from calls`;
    expect(row!.calls).toBe(made.a + made.b + made.c);
    for (const type of ['input', 'output', 'cache_read', 'cache_write_5m', 'cache_write_1h']) {
      expect(sum(samples, 'keygate_tokens_total', { type }), type).toBe(row![type]);
    }
    expect(row!.cache_read).toBeGreaterThan(0);
    expect(sum(samples, 'keygate_cost_usd_total')).toBeGreaterThan(0);
  });

  it('no label holds a key id, an app key, the provider key or a key-shaped model id', () => {
    const values = samples.flatMap((s) => Object.values(s.labels));
    for (const v of values) {
      expect(v).not.toMatch(/kg_(live|test|admin)_|sk-ant-/);
      for (const id of keyIds) expect(v).not.toContain(id);
    }
    expect(values.join('\n')).not.toContain(PROVIDER_KEY);
    expect(Object.keys(samples.find((s) => s.name === 'keygate_calls_total')!.labels).sort()).toEqual([
      'account',
      'endpoint',
      'model',
      'status_class',
    ]);
  });

  it('shows the instance view of the limits and of key changes', async () => {
    expect(sum(samples, 'keygate_limits_backend', { backend: 'memory' })).toBe(1);
    expect(sum(samples, 'keygate_limits_on_redis_down', { mode: 'open' })).toBe(1);
    expect(sum(samples, 'keygate_limits_redis_down')).toBe(0);
    expect(sum(samples, 'keygate_call_log_queue_depth')).toBeGreaterThanOrEqual(0);
    // The harness's gateway spools its call records: after a flush the gauges match the writer's own figures.
    await stack.gateway.writer.flush();
    // Spool segments are deleted just after their records commit: compare a scrape taken while the
    // writer's figures held still (the same before and after it).
    let settled = parse((await scrape(stack.gateway.url)).text);
    let status = stack.gateway.writer.status();
    await waitFor(
      async () => {
        const first = stack.gateway.writer.status();
        settled = parse((await scrape(stack.gateway.url)).text);
        status = stack.gateway.writer.status();
        return first.spoolBytes === status.spoolBytes && first.queued === status.queued;
      },
      { timeout: 1_000, interval: 20 },
    ).catch(() => {}); // the checks below name what differs
    expect(settled.map((s) => s.name)).toEqual(
      expect.arrayContaining([
        'keygate_call_log_spool_bytes',
        'keygate_call_log_spool_oldest_age_seconds',
        'keygate_call_log_spool_full',
      ]),
    );
    expect(sum(settled, 'keygate_call_log_spool_bytes')).toBe(status.spoolBytes);
    expect(sum(settled, 'keygate_call_log_spool_full')).toBe(0);
    expect(sum(settled, 'keygate_call_log_queue_depth')).toBe(status.queued);
    const before = sum(parse((await scrape(stack.gateway.url)).text), 'keygate_invalidations_received_total');
    const acct = await stack.seedAccount();
    const k = (await api(stack.gateway.url, '/v1/organizations/api_keys', { key: acct.adminKey, body: {} }))
      .body as { id: string };
    expect(
      (
        await api(stack.gateway.url, `/v1/organizations/api_keys/${k.id}`, {
          key: acct.adminKey,
          body: { status: 'inactive' },
        })
      ).status,
    ).toBe(200);
    await waitFor(
      async () =>
        sum(parse((await scrape(stack.gateway.url)).text), 'keygate_invalidations_received_total') > before,
      { timeout: 2_500, interval: 50, what: 'the invalidation to be counted' },
    );
    const age = sum(
      parse((await scrape(stack.gateway.url)).text),
      'keygate_invalidation_last_applied_age_seconds',
    );
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(5);
  });
});
