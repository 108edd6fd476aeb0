import { startCloudEmulator, type CloudEmulator } from '@keygate/emulator';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { api, startStack, type Stack } from './harness';
import { runKeygate } from './cli-runner';

/**
 * An account's upstreams after its provider key (issue 31 item 4): failover before the first
 * byte and never after, one call record at the serving upstream's price, each cloud's auth as
 * the emulator checks it (SigV4 re-signed with the test credential), and prompt caching (both
 * TTLs, the cache betas) reaching every upstream as the client sent it.
 */
const AWS = {
  accessKeyId: 'AKIDKEYGATETEST0001',
  secretAccessKey: 'aws-secret-0123456789abcdefghij',
  region: 'us-west-2',
};
const SECRETS = {
  awsKey: 'aws-workspace-key-0123456789abcdef',
  bedrock: 'bedrock-api-key-0123456789abcdef',
  google: 'ya29.google-token-0123456789abcdef',
  foundry: 'foundry-key-0123456789abcdef',
  anthropic: 'test-upstream-key-of-a-second-account-0123456789',
};
const WORKSPACE = 'wrkspc_0123456789';

let stack: Stack;
const clouds: CloudEmulator[] = [];
const opPath = () => `/operator/v1/accounts/${stack.account.id}`;
const op = (path: string, body?: unknown, method?: string) =>
  api(stack.gateway.url, opPath() + path, {
    bearer: stack.config.operatorToken!,
    ...(body !== undefined ? { body } : {}),
    ...(method ? { method } : {}),
  });

async function cloud(
  kind: Parameters<typeof startCloudEmulator>[0]['kind'],
  auth: Parameters<typeof startCloudEmulator>[0]['auth'],
  workspaceId?: string,
) {
  const c = await startCloudEmulator({ kind, auth, ...(workspaceId ? { workspaceId } : {}) });
  clouds.push(c);
  return c;
}

async function addUpstream(body: Record<string, unknown>): Promise<string> {
  const res = await op('/upstreams', body);
  expect(
    res.status,
    JSON.stringify(res.body) + stack.logs.filter((l) => l.includes('error')).join('\n'),
  ).toBe(200);
  return res.body.id;
}

async function clearUpstreams(): Promise<void> {
  const listed = await op('/upstreams');
  for (const u of listed.body.data) await op(`/upstreams/${u.id}`, undefined, 'DELETE');
  for (const c of clouds) {
    c.fault = null;
    c.received.length = 0;
  }
}

const message = { model: 'claude-opus-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] };
const call = (body: object = message, headers: Record<string, string> = {}) =>
  api(stack.gateway.url, '/v1/messages', { bearer: stack.appKey, headers, body });

beforeAll(async () => {
  stack = await startStack({ KEYGATE_EGRESS_ALLOW: '127.0.0.1' });
  // The configured upstreams are the account's only ones: its provider key goes.
  await stack.gateway.store.db
    .sql`update accounts set provider_key_sealed = null where id = ${stack.account.id}`;
}, 60_000);

afterAll(async () => {
  for (const c of clouds) await c.close();
  await stack?.close();
});

afterEach(clearUpstreams);

describe('failover between upstreams', () => {
  it('a 529 from the first upstream: the second serves the call, recorded once at its price', async () => {
    const first = await cloud('foundry', { type: 'x-api-key', key: SECRETS.foundry });
    const second = await cloud('bedrock', { type: 'bearer', token: SECRETS.bedrock });
    first.fault = 'overloaded';
    await addUpstream({
      kind: 'foundry',
      base_url: first.baseUrl,
      auth: 'x-api-key',
      credential: SECRETS.foundry,
    });
    const b = await addUpstream({
      kind: 'bedrock',
      base_url: second.baseUrl,
      auth: 'bearer',
      credential: SECRETS.bedrock,
      region: 'us-east-1',
      model_map: { 'claude-opus-4-5': 'anthropic.claude-opus-4-5' },
    });
    const before = (await stack.calls()).length;
    const res = await call();
    expect(res.status).toBe(200);
    expect(first.received).toHaveLength(1);
    expect(second.received).toHaveLength(1);
    expect(second.received[0]!.path).toBe('/anthropic/v1/messages');
    expect(JSON.parse(second.received[0]!.body.toString()).model).toBe('anthropic.claude-opus-4-5');
    const rows = (await stack.calls()).slice(before);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ upstream: b, status: 200, model: 'claude-opus-4-5' });
    // Priced from the catalog under the client's model id: the Bedrock id is not in it.
    const listed = await op(`/requests?limit=1`);
    expect(listed.body.data[0].upstream).toBe(b);
    expect(Number(listed.body.data[0].cost.total_usd ?? listed.body.data[0].cost.usd ?? 1)).toBeGreaterThan(
      0,
    );
  });

  it('refused connections, and a port nothing listens on: the next upstream serves', async () => {
    const refusing = await cloud('google', { type: 'bearer', token: SECRETS.google });
    refusing.fault = 'refuse';
    const closed = await cloud('google', { type: 'bearer', token: SECRETS.google });
    const deadUrl = closed.baseUrl;
    await closed.close();
    clouds.splice(clouds.indexOf(closed), 1);
    const serving = await cloud('aws', { type: 'bearer', token: SECRETS.awsKey }, WORKSPACE);
    await addUpstream({
      kind: 'google',
      base_url: refusing.baseUrl,
      auth: 'bearer',
      credential: SECRETS.google,
    });
    await addUpstream({ kind: 'google', base_url: deadUrl, auth: 'bearer', credential: SECRETS.google });
    const s = await addUpstream({
      kind: 'aws',
      base_url: serving.baseUrl,
      auth: 'bearer',
      credential: SECRETS.awsKey,
      workspace_id: WORKSPACE,
    });
    const before = (await stack.calls()).length;
    const res = await call();
    expect(res.status).toBe(200);
    expect(serving.received).toHaveLength(1);
    expect(serving.received[0]!.headers['anthropic-workspace-id']).toBe(WORKSPACE);
    const rows = (await stack.calls()).slice(before);
    expect(rows.map((r) => r.upstream)).toEqual([s]);
  });

  it('a stream that breaks mid-way is never retried: the client sees it, one record', async () => {
    const first = await cloud('foundry', { type: 'x-api-key', key: SECRETS.foundry });
    const second = await cloud('foundry', { type: 'x-api-key', key: SECRETS.foundry });
    first.fault = 'midstream';
    const a = await addUpstream({
      kind: 'foundry',
      base_url: first.baseUrl,
      auth: 'x-api-key',
      credential: SECRETS.foundry,
    });
    await addUpstream({
      kind: 'foundry',
      base_url: second.baseUrl,
      auth: 'x-api-key',
      credential: SECRETS.foundry,
    });
    const before = (await stack.calls()).length;
    const res = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.appKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...message, stream: true }),
    });
    expect(res.status).toBe(200);
    const text = await res.text().catch((e: Error) => `broken: ${e.message}`);
    expect(text).not.toContain('message_stop');
    expect(second.received).toHaveLength(0);
    const rows = (await stack.calls()).slice(before);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ upstream: a, partial: true });
  });

  it('a 4xx is the answer, not a reason to fail over', async () => {
    const first = await cloud('foundry', { type: 'x-api-key', key: 'another-key-the-gateway-lacks' });
    const second = await cloud('foundry', { type: 'x-api-key', key: SECRETS.foundry });
    await addUpstream({
      kind: 'foundry',
      base_url: first.baseUrl,
      auth: 'x-api-key',
      credential: SECRETS.foundry,
    });
    await addUpstream({
      kind: 'foundry',
      base_url: second.baseUrl,
      auth: 'x-api-key',
      credential: SECRETS.foundry,
    });
    const res = await call();
    expect(res.status).toBe(401);
    expect(second.received).toHaveLength(0);
  });
});

describe('SigV4', () => {
  it('Claude Platform on AWS checks the signature made with the test credential', async () => {
    const aws = await cloud('aws', { type: 'sigv4', ...AWS, service: 'aws-external-anthropic' }, WORKSPACE);
    const good = `${AWS.accessKeyId}:${AWS.secretAccessKey}`;
    await addUpstream({
      kind: 'aws',
      base_url: aws.baseUrl,
      auth: 'sigv4',
      credential: good,
      region: AWS.region,
      workspace_id: WORKSPACE,
    });
    const res = await call();
    expect(res.status).toBe(200);
    expect(aws.received[0]!.refused).toBeNull();
    expect(aws.received[0]!.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDKEYGATETEST0001\/\d{8}\/us-west-2\/aws-external-anthropic\/aws4_request/,
    );
    expect(aws.received[0]!.headers['x-api-key']).toBeUndefined();
  });

  it('a signature made with another secret is refused by the emulator', async () => {
    const aws = await cloud('aws', { type: 'sigv4', ...AWS, service: 'aws-external-anthropic' }, WORKSPACE);
    await addUpstream({
      kind: 'aws',
      base_url: aws.baseUrl,
      auth: 'sigv4',
      credential: `${AWS.accessKeyId}:not-the-secret-0123456789`,
      region: AWS.region,
      workspace_id: WORKSPACE,
    });
    const res = await call();
    expect(res.status).toBe(401);
    expect(aws.received[0]!.refused).toBe('SigV4 signature does not match');
  });
});

describe('prompt caching reaches every upstream unchanged', () => {
  const cached = {
    model: 'claude-opus-4-5',
    max_tokens: 16,
    system: [
      {
        type: 'text',
        text: 'A long system prompt '.repeat(20),
        cache_control: { type: 'ephemeral', ttl: '1h' },
      },
    ],
    messages: [
      {
        role: 'user',
        content: [{ type: 'text', text: 'hello', cache_control: { type: 'ephemeral', ttl: '5m' } }],
      },
    ],
  };
  const betas = 'prompt-caching-2024-07-31,extended-cache-ttl-2025-04-11';
  const cases = [
    {
      kind: 'anthropic',
      auth: { type: 'x-api-key', key: SECRETS.anthropic },
      up: { auth: 'x-api-key', credential: SECRETS.anthropic },
    },
    {
      kind: 'aws',
      auth: { type: 'sigv4', ...AWS, service: 'aws-external-anthropic' },
      up: {
        auth: 'sigv4',
        credential: `${AWS.accessKeyId}:${AWS.secretAccessKey}`,
        region: AWS.region,
        workspace_id: WORKSPACE,
      },
      workspace: WORKSPACE,
    },
    {
      kind: 'bedrock',
      auth: { type: 'bearer', token: SECRETS.bedrock },
      up: { auth: 'bearer', credential: SECRETS.bedrock },
    },
    {
      kind: 'google',
      auth: { type: 'bearer', token: SECRETS.google },
      up: { auth: 'bearer', credential: SECRETS.google },
    },
    {
      kind: 'foundry',
      auth: { type: 'x-api-key', key: SECRETS.foundry },
      up: { auth: 'x-api-key', credential: SECRETS.foundry },
    },
  ] as const;

  for (const c of cases) {
    it(`${c.kind}: cache_control (5m and 1h) and the cache betas as sent`, async () => {
      const e = await cloud(c.kind, c.auth as never, 'workspace' in c ? c.workspace : undefined);
      await addUpstream({ kind: c.kind, base_url: e.baseUrl, ...c.up });
      const sent = JSON.stringify(cached);
      const res = await api(stack.gateway.url, '/v1/messages', {
        bearer: stack.appKey,
        headers: { 'anthropic-beta': betas },
        body: sent,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const got = e.received.at(-1)!;
      expect(got.refused).toBeNull();
      expect(got.body.toString()).toBe(sent);
      expect(got.headers['anthropic-beta']).toBe(betas);
      expect(res.body.usage.cache_creation.ephemeral_1h_input_tokens).toBeGreaterThan(0);
    });
  }
});

describe('credentials', () => {
  it('never appear in the account API, its errors or the logs', async () => {
    const e = await cloud('bedrock', { type: 'bearer', token: SECRETS.bedrock });
    await addUpstream({ kind: 'bedrock', base_url: e.baseUrl, auth: 'bearer', credential: SECRETS.bedrock });
    const listed = await op('/upstreams');
    expect(listed.body.data[0].credential_hint).toBe(`…${SECRETS.bedrock.slice(-4)}`);
    const wrongAuth = await op('/upstreams', {
      kind: 'google',
      base_url: e.baseUrl,
      auth: 'sigv4',
      credential: SECRETS.google,
    });
    expect(wrongAuth.status).toBe(400);
    const blocked = await op('/upstreams', {
      kind: 'foundry',
      base_url: 'http://10.0.0.1/anthropic',
      auth: 'x-api-key',
      credential: SECRETS.foundry,
    });
    expect(blocked.status).toBe(400);
    expect(blocked.body.error.message).toBe('url: blocked by the egress policy.');
    e.fault = 'refuse';
    expect((await call()).status).toBe(502);
    const seen = JSON.stringify([listed.body, wrongAuth.body, blocked.body]) + stack.logs.join('\n');
    for (const secret of [...Object.values(SECRETS), AWS.secretAccessKey]) expect(seen).not.toContain(secret);
  });
});

describe('keygate upstream', () => {
  it('adds, lists, orders and removes, the credential taken from the environment', async () => {
    const a = await cloud('google', { type: 'bearer', token: SECRETS.google });
    const b = await cloud('foundry', { type: 'x-api-key', key: SECRETS.foundry });
    const saved = { ...process.env };
    process.env.KEYGATE_EGRESS_ALLOW = '127.0.0.1';
    process.env.UP_GOOGLE = SECRETS.google;
    process.env.UP_FOUNDRY = SECRETS.foundry;
    try {
      const acct = ['--account', stack.account.id];
      const add = (kind: string, url: string, auth: string, env: string) =>
        runKeygate(stack, [
          'upstream',
          'add',
          ...acct,
          '--kind',
          kind,
          '--base-url',
          url,
          '--auth',
          auth,
          '--credential-env',
          env,
          '--json',
        ]);
      const first = await add('google', a.baseUrl, 'bearer', 'UP_GOOGLE');
      expect(first.code, first.stderr).toBe(0);
      const second = await add('foundry', b.baseUrl, 'x-api-key', 'UP_FOUNDRY');
      const [ga, fb] = [JSON.parse(first.stdout).id, JSON.parse(second.stdout).id];
      const listed = await runKeygate(stack, ['upstream', 'list', ...acct]);
      expect(listed.stdout).toMatch(new RegExp(`1 +${ga}[\\s\\S]*2 +${fb}`));
      const unset = await runKeygate(stack, [
        'upstream',
        'add',
        ...acct,
        '--kind',
        'google',
        '--base-url',
        a.baseUrl,
        '--auth',
        'bearer',
        '--credential-env',
        'UP_NOT_SET',
      ]);
      expect(unset.code).not.toBe(0);
      expect(unset.stderr).toContain('$UP_NOT_SET is not set');
      const ordered = await runKeygate(stack, [
        'upstream',
        'order',
        ...acct,
        '--ids',
        `${fb},${ga}`,
        '--json',
      ]);
      expect(JSON.parse(ordered.stdout).data.map((u: { id: string }) => u.id)).toEqual([fb, ga]);
      const badOrder = await op('/upstreams/order', { ids: [fb] });
      expect(badOrder.status).toBe(400);
      expect((await call()).status).toBe(200);
      expect(b.received).toHaveLength(1);
      expect(a.received).toHaveLength(0);
      const removed = await runKeygate(stack, ['upstream', 'remove', ...acct, fb]);
      expect(removed.stdout).toContain(`Removed upstream ${fb}.`);
      const missing = await runKeygate(stack, ['upstream', 'remove', ...acct, fb]);
      expect(missing.code).not.toBe(0);
      const all = [listed.stdout, ordered.stdout, removed.stdout, first.stdout, second.stdout].join('\n');
      for (const secret of [SECRETS.google, SECRETS.foundry]) expect(all).not.toContain(secret);
    } finally {
      process.env = saved;
    }
    // Each run of the CLI starts a process that reads the compiled build.
  }, 240_000);
});
