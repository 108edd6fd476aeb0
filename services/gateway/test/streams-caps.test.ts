import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from './harness';
import { readStream } from './sse-read';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
// Two paced streams of this emulator answer (5,002 bytes each) fit; a third does not.
const PER_KEY = 12_000;
const PACED = { 'x-emulator-scenario': 'paced', 'x-emulator-interval-ms': '15', 'x-emulator-deltas': '24' };

describe.each([
  ['in memory', {}],
  ['in Redis', { REDIS_URL }],
])('resumable streams kept %s: capped per key', (_name, env: Record<string, string>) => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ ...env, KEYGATE_RESUMABLE_MAX_BYTES_PER_KEY: String(PER_KEY) });
  }, 60_000);
  afterAll(() => stack?.close());

  const call = (key: string, headers: Record<string, string> = {}) =>
    fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'keygate-resumable': 'true',
        ...headers,
      },
      body: JSON.stringify({
        model: 'claude-opus-4-5',
        max_tokens: 64,
        stream: true,
        messages: [{ role: 'user', content: 'Tell me about gateways, at length.' }],
      }),
    });
  const resume = (key: string, callId: string) =>
    fetch(`${stack.gateway.url}/v1/messages/${callId}/events`, {
      headers: { authorization: `Bearer ${key}` },
    });
  /** The call is over at the gateway: it read the stream to its end and recorded the call. */
  const recorded = (callId: string) =>
    expect
      .poll(async () => (await stack.calls()).some((r) => r.id === callId), { timeout: 10_000 })
      .toBe(true);

  it('past the cap the oldest abandoned streams are dropped (a resume is a 404); the newer ones still resume whole', async () => {
    const { secret: key } = await stack.newKey();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await call(key, PACED);
      const callId = res.headers.get('keygate-call-id')!;
      // The client goes away after three events: the gateway reads on and keeps the rest.
      await readStream(res, (events) => events.length >= 3);
      await recorded(callId);
      ids.push(callId);
    }
    const kept: number[] = [];
    for (const [i, callId] of ids.entries()) {
      const res = await resume(key, callId);
      if (i < 2) {
        expect(res.status, callId).toBe(404);
        expect(await res.json()).toMatchObject({
          type: 'error',
          error: { type: 'not_found_error', message: expect.stringContaining('memory caps') },
        });
      } else {
        expect(res.status, callId).toBe(200);
        const text = await readStream(res);
        expect(text).toMatch(/event: message_stop/);
        kept.push(text.length);
      }
    }
    // What is kept for the key stays under its cap.
    expect(kept.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(PER_KEY);
  });

  it('a stream whose client is still reading is not abandoned: younger finished ones go first', async () => {
    const { secret: key } = await stack.newKey();
    const live = await call(key, { ...PACED, 'x-emulator-interval-ms': '150' });
    const liveId = live.headers.get('keygate-call-id')!;
    const reading = readStream(live);
    const quick: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await call(key);
      quick.push(res.headers.get('keygate-call-id')!);
      await readStream(res);
    }
    const liveText = await reading;
    expect(liveText).toMatch(/event: message_stop/);
    await recorded(liveId);
    // 4 finished streams of 2,284 bytes and the live one of 5,002 pass 12,000: the oldest finished goes.
    expect((await resume(key, quick[0]!)).status).toBe(404);
    for (const callId of quick.slice(1)) expect((await resume(key, callId)).status, callId).toBe(200);
    const replay = await resume(key, liveId);
    expect(replay.status).toBe(200);
    expect(await readStream(replay)).toBe(liveText);
  });

  it("another key's streams are not touched by this key's cap", async () => {
    const { secret: other } = await stack.newKey();
    const res = await call(other, PACED);
    const callId = res.headers.get('keygate-call-id')!;
    await readStream(res);
    const { secret: key } = await stack.newKey();
    for (let i = 0; i < 3; i++) await readStream(await call(key, PACED));
    const again = await resume(other, callId);
    expect(again.status).toBe(200);
    expect(await readStream(again)).toMatch(/event: message_stop/);
  });
});
