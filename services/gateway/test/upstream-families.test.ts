import { startCloudEmulator, type CloudEmulator } from '@keygate/emulator';
import { describe, expect, it } from 'vitest';
import { api } from './harness';
import { upstreamSuite } from './kit/upstream-suite';

/**
 * Files and batches through the account's upstreams (issue 31): each kind declares the endpoint
 * families it serves (upstreams/kinds.ts); these go to the first upstream in order that serves
 * them, fail over before the first byte as messages do, and are refused clearly when none does.
 */
const WORKSPACE = 'wrkspc_families01';
const KEYS = { aws: 'aws-workspace-key-families-0123', bedrock: 'bedrock-key-families-0123' };

const { suite, op } = upstreamSuite();
const { clouds } = suite;

async function aws(): Promise<CloudEmulator> {
  const c = await startCloudEmulator({
    kind: 'aws',
    auth: { type: 'bearer', token: KEYS.aws },
    workspaceId: WORKSPACE,
  });
  clouds.push(c);
  const added = await op('/upstreams', {
    kind: 'aws',
    base_url: c.baseUrl,
    auth: 'bearer',
    credential: KEYS.aws,
    workspace_id: WORKSPACE,
  });
  expect(added.status, JSON.stringify(added.body)).toBe(200);
  return c;
}

async function bedrock(): Promise<CloudEmulator> {
  const c = await startCloudEmulator({ kind: 'bedrock', auth: { type: 'bearer', token: KEYS.bedrock } });
  clouds.push(c);
  const added = await op('/upstreams', {
    kind: 'bedrock',
    base_url: c.baseUrl,
    auth: 'bearer',
    credential: KEYS.bedrock,
    model_map: { 'claude-opus-4-5': 'anthropic.claude-opus-4-5' },
  });
  expect(added.status).toBe(200);
  return c;
}

const params = { model: 'claude-opus-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
const createBatch = () =>
  api(suite.stack.gateway.url, '/v1/messages/batches', {
    bearer: suite.stack.appKey,
    body: { requests: [{ custom_id: 'one', params }] },
  });
const batchCalls = (c: CloudEmulator) => c.received.filter((r) => r.path.includes('/v1/messages/batches'));

describe('endpoint families through upstreams', () => {
  it('batches skip an upstream that serves messages only; messages still take it first', async () => {
    const b = await bedrock();
    const a = await aws();
    const created = await createBatch();
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.id).toMatch(/^msgbatch_/);
    expect(batchCalls(b)).toHaveLength(0);
    expect(batchCalls(a)).toHaveLength(1);
    expect(batchCalls(a)[0]!.headers['anthropic-workspace-id']).toBe(WORKSPACE);
    const read = await api(suite.stack.gateway.url, `/v1/messages/batches/${created.body.id}`, {
      bearer: suite.stack.appKey,
    });
    expect(read.status).toBe(200);
    // The read went to the batch's upstream (the batch follower may read it there too, at its own pace).
    const reads = batchCalls(a).filter((r) => r.method === 'GET' && r.path.endsWith(created.body.id));
    expect(reads.length).toBeGreaterThanOrEqual(1);
    expect(batchCalls(a).filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(batchCalls(b)).toHaveLength(0);
    const message = await api(suite.stack.gateway.url, '/v1/messages', {
      bearer: suite.stack.appKey,
      body: params,
    });
    expect(message.status).toBe(200);
    expect(b.received.filter((r) => r.path === '/anthropic/v1/messages')).toHaveLength(1);
  });

  it('a 529 from the first that serves them fails over to the next, before any byte', async () => {
    await bedrock();
    const first = await aws();
    const second = await aws();
    first.fault = 'overloaded';
    const created = await createBatch();
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(batchCalls(first)).toHaveLength(1);
    expect(batchCalls(second)).toHaveLength(1);
    expect(batchCalls(second)[0]!.body.toString()).toBe(batchCalls(first)[0]!.body.toString());
  });

  it('no upstream of the account serves batches: a clear 403, nothing sent', async () => {
    const b = await bedrock();
    const res = await createBatch();
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    expect(res.body.error.message).toBe(
      "None of this account's upstreams serves Message Batches; the provider's API and Claude Platform on AWS do: an account admin adds one.",
    );
    expect(b.received).toHaveLength(0);
    const files = await api(suite.stack.gateway.url, '/v1/files', { bearer: suite.stack.appKey });
    expect(files.status).toBe(403);
    expect(files.body.error.message).toContain('serves the Files API');
  });
});
