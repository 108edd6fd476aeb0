import AnthropicBedrock from '@anthropic-ai/bedrock-sdk';
import AnthropicVertex from '@anthropic-ai/vertex-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from './harness';
import { waitFor } from './kit/wait';
import { startSurfaceStack, type SurfaceStack } from './surface-kit';

/**
 * Issue 31 item 4: Bedrock InvokeModel and Vertex rawPredict in front of the messages pipeline,
 * driven by the official Bedrock and Vertex SDKs as Claude Code configures them behind a gateway
 * (skip the cloud's auth, send the Keygate key), the emulator as the provider.
 */
let s: SurfaceStack;
const MODEL = 'claude-haiku-4-5-20251001';
const BEDROCK_MODEL = 'anthropic.claude-haiku-4-5-20251001-v1:0';
const VERTEX_MODEL = 'claude-haiku-4-5@20251001';
const ask = { max_tokens: 32, messages: [{ role: 'user' as const, content: 'Say hi.' }] };

beforeAll(async () => {
  s = await startSurfaceStack();
}, 60_000);
afterAll(() => s?.stack.close());

/** As `AWS_BEARER_TOKEN_BEDROCK=<keygate key>` and `ANTHROPIC_BEDROCK_BASE_URL` configure it. */
const bedrock = (key: string) =>
  new AnthropicBedrock({
    baseURL: `${s.stack.gateway.url}/bedrock`,
    apiKey: key,
    awsRegion: 'us-east-1',
    maxRetries: 0,
  });

/** As `CLAUDE_CODE_SKIP_BEDROCK_AUTH=1` with the key in `ANTHROPIC_CUSTOM_HEADERS` configures it. */
const bedrockSkipAuth = (key: string) =>
  new AnthropicBedrock({
    baseURL: `${s.stack.gateway.url}/bedrock`,
    skipAuth: true,
    apiKey: null,
    awsRegion: 'us-east-1',
    defaultHeaders: { 'x-api-key': key },
    maxRetries: 0,
  });

/** As `CLAUDE_CODE_SKIP_VERTEX_AUTH=1` with the key in `ANTHROPIC_CUSTOM_HEADERS` configures it. */
const vertex = (key: string) =>
  new AnthropicVertex({
    baseURL: `${s.stack.gateway.url}/vertex/v1`,
    region: 'us-east5',
    projectId: 'team-project',
    // No Google credentials: an auth client that adds none, as Claude Code's skip-auth does.
    authClient: { getRequestHeaders: async () => new Headers(), projectId: 'team-project' } as never,
    defaultHeaders: { 'x-api-key': key },
    maxRetries: 0,
  });

/** Keygate's id of a call: a relayed answer's request-id is the provider's. */
const callId = (res: Response) => res.headers.get('keygate-request-id') ?? res.headers.get('request-id');

/** The call log's entry of a request id, as the account API lists it (with its cost). */
async function logged(requestId: string | null | undefined): Promise<Record<string, any>> {
  expect(requestId).toBeTruthy();
  return waitFor(
    async () => {
      await s.stack.gateway.writer.flush();
      const page = await api(s.stack.gateway.url, '/v1/organizations/requests?limit=50', { key: s.adminKey });
      return (page.body.data as Record<string, any>[]).find((c) => c.id === requestId);
    },
    { timeout: 5_000, what: `the call log entry of ${requestId}` },
  );
}

async function loggedOnce(requestId: string | null | undefined): Promise<Record<string, any>> {
  const entry = await logged(requestId);
  const rows = (await s.stack.calls()).filter((r) => r.id === requestId);
  expect(rows).toHaveLength(1);
  return { ...entry, row: rows[0]! };
}

function expectRecorded(entry: Record<string, any>, usage: { input_tokens: number; output_tokens: number }) {
  expect(entry.model).toBe(MODEL);
  expect(entry.status).toBe(200);
  expect(entry.row).toMatchObject({
    model: MODEL,
    input_tokens: usage.input_tokens,
    output_tokens: usage.output_tokens,
  });
  expect(entry.cost).toMatchObject({ currency: 'USD', unpriced: false });
  expect(Number(entry.cost.amount)).toBeGreaterThan(0);
}

describe('Bedrock InvokeModel in front', () => {
  it('happy: a call through the official Bedrock SDK, answered and recorded as a Messages call', async () => {
    const { data, response } = await bedrock(s.alice.key)
      .messages.create({ model: BEDROCK_MODEL, ...ask })
      .withResponse();
    expect(data.type).toBe('message');
    expect(data.content[0]?.type).toBe('text');
    expect(data.usage.output_tokens).toBeGreaterThan(0);
    const entry = await loggedOnce(callId(response));
    expectRecorded(entry, data.usage);
    expect(entry.stream).toBe(false);
    // Priced as the same call to /v1/messages is.
    const direct = await s.alice.client.messages.create({ model: MODEL, ...ask }).withResponse();
    expect(direct.data.usage).toEqual(data.usage);
    expect((await loggedOnce(callId(direct.response))).cost).toEqual(entry.cost);
  });

  it('happy: a stream through the official Bedrock SDK, event-stream framed, recorded once', async () => {
    const stream = bedrockSkipAuth(s.alice.key).messages.stream({ model: BEDROCK_MODEL, ...ask });
    const types: string[] = [];
    stream.on('streamEvent', (e) => types.push(e.type));
    const message = await stream.finalMessage();
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
    expect(message.content[0]?.type).toBe('text');
    const entry = await loggedOnce(callId((await stream.withResponse()).response));
    expectRecorded(entry, message.usage);
    expect(entry.stream).toBe(true);
  });

  it("error: the provider's 429 in Bedrock's shape, and an error mid-stream as the SDK's stream error", async () => {
    const limited = await fetch(`${s.stack.gateway.url}/bedrock/model/${BEDROCK_MODEL}/invoke`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${s.alice.key}`,
        'content-type': 'application/json',
        'x-emulator-scenario': 'rate_limit',
      },
      body: JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', ...ask }),
    });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('x-amzn-errortype')).toBe('ThrottlingException');
    expect(Object.keys((await limited.json()) as object)).toEqual(['message']);
    const stream = bedrock(s.alice.key).messages.stream(
      { model: BEDROCK_MODEL, ...ask },
      { headers: { 'x-emulator-scenario': 'stream_error' } },
    );
    // The provider's `error` event, carried in a chunk frame, is what the SDK raises.
    const err = (await stream.finalMessage().catch((e: unknown) => e)) as { error?: unknown };
    expect(err).toBeInstanceOf(Error);
    expect(err.error).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
  });

  it("happy: a cross-region inference profile's ARN as the model, through the official Bedrock SDK", async () => {
    const arn = `arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.${BEDROCK_MODEL}`;
    const { data, response } = await bedrock(s.alice.key)
      .messages.create({ model: arn, ...ask })
      .withResponse();
    expect(data.type).toBe('message');
    expectRecorded(await loggedOnce(callId(response)), data.usage);
  });

  it('error: a model id that is not a Claude Bedrock id is a ValidationException in Bedrock shape', async () => {
    const res = await fetch(`${s.stack.gateway.url}/bedrock/model/amazon.titan-text-v1/invoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.alice.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', ...ask }),
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-amzn-errortype')).toBe('ValidationException');
    const body = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['message']);
    expect(body.message).toContain('amazon.titan-text-v1');
    expect((await loggedOnce(callId(res))).status).toBe(400);
  });

  it('security: no key, or a wrong one, is refused in Bedrock shape', async () => {
    const res = await fetch(`${s.stack.gateway.url}/bedrock/model/${BEDROCK_MODEL}/invoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', ...ask }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('x-amzn-errortype')).toBe('UnrecognizedClientException');
    expect(Object.keys((await res.json()) as object)).toEqual(['message']);
    const err = (await bedrock('kg_live_wrong')
      .messages.create({ model: BEDROCK_MODEL, ...ask })
      .catch((e: unknown) => e)) as { status: number };
    expect(err.status).toBe(401);
  });
});

describe('Vertex AI rawPredict in front', () => {
  it('happy: a call through the official Vertex SDK, answered and recorded as a Messages call', async () => {
    const { data, response } = await vertex(s.alice.key)
      .messages.create({ model: VERTEX_MODEL, ...ask })
      .withResponse();
    expect(data.type).toBe('message');
    expect(data.content[0]?.type).toBe('text');
    const entry = await loggedOnce(callId(response));
    expectRecorded(entry, data.usage);
  });

  it('happy: streamRawPredict through the official Vertex SDK', async () => {
    const stream = vertex(s.alice.key).messages.stream({ model: VERTEX_MODEL, ...ask });
    const message = await stream.finalMessage();
    expect(message.content[0]?.type).toBe('text');
    const entry = await loggedOnce(callId((await stream.withResponse()).response));
    expectRecorded(entry, message.usage);
    expect(entry.stream).toBe(true);
  });

  it('happy: count-tokens:rawPredict, the model named in the body', async () => {
    const counted = await vertex(s.alice.key).messages.countTokens({
      model: VERTEX_MODEL,
      messages: ask.messages,
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
  });

  it('error: a bad model id is a 400 in the provider shape the Vertex SDK reads', async () => {
    const err = (await vertex(s.alice.key)
      .messages.create({ model: 'gemini-pro', ...ask })
      .catch((e: unknown) => e)) as { status: number; error: { error: { type: string; message: string } } };
    expect(err.status).toBe(400);
    expect(err.error.error.type).toBe('invalid_request_error');
    expect(err.error.error.message).toContain('gemini-pro');
  });
});

describe('model policy through the fronts', () => {
  it("refuses a model outside the key's policy, in each front's shape, before the provider", async () => {
    const set = await api(s.stack.gateway.url, '/v1/organizations/model_policies', {
      key: s.adminKey,
      body: {
        scope: { type: 'user', user_id: s.bob.memberId },
        allowed_models: ['claude-sonnet-*'],
        max_tokens: null,
      },
    });
    expect(set.status).toBe(200);
    const before = s.stack.emulator.ledger.entries.length;
    const refused = await waitFor(
      () =>
        bedrock(s.bob.key)
          .messages.create({ model: BEDROCK_MODEL, ...ask })
          .then(
            () => null,
            (e: { status: number; error: Record<string, unknown>; headers: Headers }) => e,
          ),
      { timeout: 5_000, what: 'the policy to reach the key' },
    );
    expect(refused.status).toBe(400);
    expect(Object.keys(refused.error)).toEqual(['message']);
    expect(String(refused.error.message)).toContain(MODEL);
    const viaVertex = (await vertex(s.bob.key)
      .messages.create({ model: VERTEX_MODEL, ...ask })
      .catch((e: unknown) => e)) as { status: number; error: { error: { type: string } } };
    expect(viaVertex.status).toBe(400);
    expect(viaVertex.error.error.type).toBe('invalid_request_error');
    expect(s.stack.emulator.ledger.entries.length).toBe(before);
  });
});
