import { createEmulatorHandler } from '@keygate/emulator';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDER_KEY, startStack, type Stack } from './harness';

/** The emulator behind a server that can hold its answers back or answer with a redirect. */
async function moodyProvider() {
  const emulator = createEmulatorHandler({ apiKey: PROVIDER_KEY });
  const state = { mood: 'fine' as 'fine' | 'slow' | 'redirect', modelRequests: 0 };
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/v1/models')) state.modelRequests += 1;
    if (state.mood === 'redirect') {
      res.writeHead(307, { location: 'http://127.0.0.1:9/v1/models' });
      return res.end();
    }
    if (state.mood === 'slow') return void setTimeout(() => emulator(req, res), 5_000).unref();
    emulator(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, state, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('model discovery as Claude Code asks for it (GET /v1/models?limit=1000)', () => {
  let stack: Stack;
  let provider: Awaited<ReturnType<typeof moodyProvider>>;
  beforeAll(async () => {
    provider = await moodyProvider();
    stack = await startStack({ KEYGATE_UPSTREAM_URL: provider.url, KEYGATE_MODELS_CACHE_MS: '0' });
  });
  afterAll(async () => {
    await stack?.close();
    provider?.server.closeAllConnections();
    await new Promise((r) => provider?.server.close(r));
  });

  const discover = () =>
    fetch(`${stack.gateway.url}/v1/models?limit=1000`, {
      headers: { authorization: `Bearer ${stack.appKey}` },
      redirect: 'manual',
    });

  it("answers the provider's list, then the last good list within the 3 s budget when the provider is slow or redirects", async () => {
    provider.state.mood = 'fine';
    const first = await discover();
    expect(first.status).toBe(200);
    const list = (await first.json()) as { data: { id: string }[] };
    const direct = await fetch(`${provider.url}/v1/models?limit=1000`, {
      headers: { 'x-api-key': PROVIDER_KEY },
    });
    expect(list).toEqual(await direct.json());
    expect(list.data.length).toBeGreaterThan(0);
    expect(list.data.every((m) => m.id.includes('claude'))).toBe(true);

    provider.state.mood = 'slow';
    const started = performance.now();
    const slow = await discover();
    // The gateway gives the provider 2.5 s (inside Claude Code's 3 s), then answers its last good
    // list: well before the slow provider's answer at 5 s, whatever the load on this machine.
    expect(performance.now() - started).toBeLessThan(4_500);
    expect(slow.status).toBe(200);
    expect(await slow.json()).toEqual(list);

    provider.state.mood = 'redirect';
    const redirected = await discover();
    expect(redirected.status).toBe(200);
    expect(redirected.headers.get('location')).toBeNull();
    expect(await redirected.json()).toEqual(list);

    const calls = (await stack.calls()).filter((c) => c.endpoint === 'models');
    expect(calls.map((c) => c.status)).toEqual([200, 200, 200]);
  });

  it('without a list to fall back on, a redirect is a 502 in the provider shape, never passed on', async () => {
    provider.state.mood = 'redirect';
    const other = await stack.newKey({ kind: 'live' });
    const res = await fetch(`${stack.gateway.url}/v1/models?limit=7`, {
      headers: { authorization: `Bearer ${other.secret}` },
      redirect: 'manual',
    });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'api_error' } });
  });
});

describe('the model list cache', () => {
  let stack: Stack;
  let provider: Awaited<ReturnType<typeof moodyProvider>>;
  beforeAll(async () => {
    provider = await moodyProvider();
    stack = await startStack({ KEYGATE_UPSTREAM_URL: provider.url });
  });
  afterAll(async () => {
    await stack?.close();
    await new Promise((r) => provider?.server.close(r));
  });

  it('asks the provider once per account and query while the list is fresh, and records every call', async () => {
    const get = (q: string) =>
      fetch(`${stack.gateway.url}/v1/models${q}`, { headers: { authorization: `Bearer ${stack.appKey}` } });
    const a = await (await get('?limit=1000')).json();
    const b = await (await get('?limit=1000')).json();
    expect(b).toEqual(a);
    expect(provider.state.modelRequests).toBe(1);
    await (await get('?limit=2')).json();
    expect(provider.state.modelRequests).toBe(2);
    expect((await stack.calls()).filter((c) => c.endpoint === 'models')).toHaveLength(3);
  });
});
