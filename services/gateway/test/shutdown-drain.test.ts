import Anthropic from '@anthropic-ai/sdk';
import { startEmulator, type Emulator } from '@keygate/emulator';
import { estimateOutputTokens } from '@keygate/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayChild, startGatewayProcess } from './gateway-child';
import { PROVIDER_KEY } from './harness';

const GRACE_MS = 1_000;
let emulator: Emulator;
let gw: GatewayChild;

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, apiKey: PROVIDER_KEY });
  gw = await startGatewayProcess({
    KEYGATE_UPSTREAM_URL: emulator.url,
    KEYGATE_SHUTDOWN_GRACE_MS: String(GRACE_MS),
  });
}, 120_000);
afterAll(async () => {
  await gw?.remove();
  await emulator?.close();
});

const BODY = {
  model: 'claude-opus-4-5',
  max_tokens: 400,
  messages: [{ role: 'user', content: 'Tell me a long story about a gateway.' }],
};

interface Answer {
  status: number;
  requestId: string;
  upstreamRequestId: string | null;
  body: string;
}

/** Sends one call; resolves `started` once the first bytes of the answer arrived (streams) or headers were sent. */
function send(key: string, headers: Record<string, string>, stream: boolean) {
  let started!: () => void;
  const first = new Promise<void>((r) => (started = r));
  const answer = (async (): Promise<Answer> => {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ ...BODY, stream }),
    });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let body = '';
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      body += decoder.decode(chunk.value, { stream: true });
      if (body.includes('event: content_block_delta')) started();
    }
    return {
      status: res.status,
      requestId: res.headers.get('keygate-request-id') ?? res.headers.get('request-id')!,
      upstreamRequestId: res.headers.get('keygate-request-id') ? res.headers.get('request-id') : null,
      body,
    };
  })();
  if (!stream) started();
  return { first, answer };
}

const paced = (deltas: number, intervalMs: number) => ({
  'x-emulator-scenario': 'paced',
  'x-emulator-deltas': String(deltas),
  'x-emulator-interval-ms': String(intervalMs),
  'x-emulator-output-tokens': String(deltas),
});

/** The text of the content_block_delta events a client received. */
function forwardedText(body: string): string {
  return body
    .split('\n\n')
    .filter((e) => e.startsWith('event: content_block_delta'))
    .map((e) => (JSON.parse(e.slice(e.indexOf('data: ') + 6)) as { delta: { text: string } }).delta.text)
    .join('');
}

describe('SIGTERM with calls and streams in flight', () => {
  it('finishes what fits in the grace, ends the rest with overloaded_error, records them as shutdown with their estimate, exits 0', async () => {
    const account = await gw.cli(
      ['account', 'create', '--name', 'Drain', '--plan', 'solo', '--provider-key-env', 'PK'],
      { PK: PROVIDER_KEY },
    );
    const key = (await gw.cli(['key', 'create', '--account', account.id])).key as string;

    const quick = [send(key, paced(6, 40), true), send(key, paced(6, 40), true)];
    const long = [send(key, paced(300, 25), true), send(key, paced(300, 25), true)];
    const quickCall = send(
      key,
      { 'x-emulator-scenario': 'slow_first_byte', 'x-emulator-delay-ms': '300' },
      false,
    );
    const slowCall = send(
      key,
      { 'x-emulator-scenario': 'slow_first_byte', 'x-emulator-delay-ms': '8000' },
      false,
    );
    // The official SDK as a client: the error event reaches it as an APIError of that type.
    const sdk = new Anthropic({
      authToken: key,
      apiKey: null,
      baseURL: gw.url,
      maxRetries: 0,
      defaultHeaders: paced(300, 25),
    });
    let sdkStarted!: () => void;
    const sdkFirst = new Promise<void>((r) => (sdkStarted = r));
    const sdkStream = (async () => {
      const events: string[] = [];
      try {
        for await (const event of await sdk.messages.create({
          ...BODY,
          stream: true,
        } as Anthropic.MessageCreateParamsStreaming)) {
          events.push(event.type);
          if (event.type === 'content_block_delta') sdkStarted();
        }
        return { events, error: null };
      } catch (error) {
        return { events, error: error as InstanceType<typeof Anthropic.APIError> };
      }
    })();
    await Promise.all([...quick, ...long].map((s) => s.first).concat(sdkFirst));

    const t0 = Date.now();
    gw.proc.kill('SIGTERM');
    const code = await gw.exited;
    const stopMs = Date.now() - t0;
    expect(code, gw.stderr()).toBe(0);
    // The grace, the farewell second, and the final write of the call log.
    expect(stopMs).toBeGreaterThanOrEqual(GRACE_MS);
    expect(stopMs).toBeLessThan(GRACE_MS + 5_000);

    const [q1, q2, l1, l2, qc, sc] = await Promise.all(
      [...quick, ...long, quickCall, slowCall].map((s) => s.answer),
    );
    for (const q of [q1!, q2!]) {
      expect(q.body).toContain('event: message_stop');
      expect(q.body).not.toContain('event: error');
    }
    expect(qc!.status).toBe(200);
    expect(JSON.parse(qc!.body).type).toBe('message');

    for (const l of [l1!, l2!]) {
      expect(l.status).toBe(200);
      expect(l.body).not.toContain('event: message_stop');
      const last = l.body.trimEnd().split('\n\n').at(-1)!;
      expect(last.split('\n')[0]).toBe('event: error');
      const data = JSON.parse(last.slice(last.indexOf('data: ') + 6));
      expect(data).toMatchObject({
        type: 'error',
        error: { type: 'overloaded_error', message: expect.stringMatching(/shutting down/) },
        request_id: l.requestId,
      });
    }
    expect(sc!.status).toBe(529);
    expect(JSON.parse(sc!.body)).toMatchObject({
      type: 'error',
      error: { type: 'overloaded_error', message: expect.stringMatching(/shutting down/) },
      request_id: sc!.requestId,
    });

    const sdkResult = await sdkStream;
    expect(sdkResult.events).toContain('content_block_delta');
    expect(sdkResult.events).not.toContain('message_stop');
    expect(sdkResult.error).toBeInstanceOf(Anthropic.APIError);
    expect(sdkResult.error!.type).toBe('overloaded_error');

    const db = await gw.database();
    try {
      const rows = await db.sql<Record<string, any>[]>`select * from calls where account_id = ${account.id}`;
      expect(rows).toHaveLength(7);
      const byId = new Map(rows.map((r) => [r.id as string, r]));
      for (const q of [q1!, q2!, qc!])
        expect(byId.get(q.requestId)).toMatchObject({
          status: 200,
          partial: false,
          estimated: false,
          error_type: null,
        });
      expect(byId.get(sc!.requestId)).toMatchObject({ status: 529, partial: true, error_type: 'shutdown' });
      const cut = rows.filter((r) => r.error_type === 'shutdown' && r.stream);
      expect(cut).toHaveLength(3);
      for (const l of [l1!, l2!]) {
        const row = byId.get(l.requestId)!;
        expect(row).toMatchObject({ status: 200, partial: true, estimated: true, error_type: 'shutdown' });
        // Never less than what the client was sent, by the gateway's own estimate rule.
        expect(row.output_tokens).toBeGreaterThanOrEqual(
          Math.max(1, estimateOutputTokens(Buffer.byteLength(forwardedText(l.body)))),
        );
        // The upstream was aborted: the provider stopped generating before the end of the reply.
        const entry = await emulator.ledger.waitFor((e) => e.requestId === l.upstreamRequestId, 5_000);
        expect(entry.complete).toBe(false);
        expect(entry.usage!.output_tokens).toBeLessThan(300);
        expect(row.input_tokens).toBe(entry.usage!.input_tokens);
      }
    } finally {
      await db.close();
    }
  }, 120_000);
});
