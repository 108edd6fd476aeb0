import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../src/accounts/service';
import type { Gateway } from '../src/server';
import { api, startStack, type Stack } from './harness';
import { waitFor } from './kit/wait';
import { parseSse, readStream } from './sse-read';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const METRICS_TOKEN = 'metrics-token-0123456789';
const KEEPALIVE_MS = 100;

let stack: Stack;
/** A second instance on the same database and Redis. */
let peer: Gateway;
/** An instance whose upstream read timeout is short. */
let impatient: Gateway;

beforeAll(async () => {
  stack = await startStack({
    REDIS_URL,
    KEYGATE_SSE_KEEPALIVE_MS: String(KEEPALIVE_MS),
    KEYGATE_METRICS_TOKEN: METRICS_TOKEN,
  });
  peer = await stack.startPeer();
  impatient = await stack.startPeer({ KEYGATE_UPSTREAM_TIMEOUT_MS: '400' });
}, 60_000);
afterAll(() => stack?.close());

function streamCall(base: string, headers: Record<string, string> = {}, key = stack.appKey) {
  return fetch(`${base}/v1/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      model: 'claude-opus-4-5',
      max_tokens: 64,
      stream: true,
      messages: [{ role: 'user', content: 'Tell me about gateways, at length.' }],
    }),
  });
}

const PACED = { 'x-emulator-scenario': 'paced', 'x-emulator-interval-ms': '15', 'x-emulator-deltas': '24' };

describe('keygate-overhead-ms', () => {
  it('every answer says how long it spent in the gateway, and the histogram counts it', async () => {
    const res = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.appKey}`,
        'content-type': 'application/json',
        'x-emulator-scenario': 'slow_first_byte',
        'x-emulator-delay-ms': '300',
      },
      body: JSON.stringify({
        model: 'claude-opus-4-5',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(res.status).toBe(200);
    await res.text();
    const overhead = Number(res.headers.get('keygate-overhead-ms'));
    expect(Number.isFinite(overhead)).toBe(true);
    expect(overhead).toBeGreaterThan(0);
    // The upstream held its answer back 300 ms: that time is the upstream's, not the gateway's.
    expect(overhead).toBeLessThan(300);
    const metrics = await fetch(`${stack.gateway.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    }).then((r) => r.text());
    const count = metrics.match(
      /^keygate_overhead_seconds_count\{endpoint="messages",stream="false"\} (\d+)$/m,
    );
    expect(Number(count?.[1])).toBeGreaterThanOrEqual(1);
  });
});

describe('keep-alive', () => {
  it('a long silent upstream: the client gets comment lines between events and the whole stream', async () => {
    const res = await streamCall(stack.gateway.url, {
      'x-emulator-scenario': 'long_silence',
      'x-emulator-silence-ms': String(KEEPALIVE_MS * 6),
    });
    const text = await readStream(res);
    const { events, comments } = parseSse(text);
    expect(events.at(-1)?.event).toBe('message_stop');
    expect(comments.length).toBeGreaterThanOrEqual(2);
    // Only between whole events: every block is an event or a lone comment.
    for (const block of text.split('\n\n').filter(Boolean)) {
      const lines = block.split('\n');
      if (lines.some((l) => l.startsWith(':'))) expect(lines).toHaveLength(1);
    }
    // They come during the silence, after the first delta.
    const firstDelta = text.indexOf('event: content_block_delta');
    expect(text.indexOf(': keygate keep-alive')).toBeGreaterThan(firstDelta);
  });

  it("the upstream's own pings are relayed as they come, and then no comment line is added", async () => {
    const res = await streamCall(stack.gateway.url, {
      'x-emulator-scenario': 'long_silence',
      'x-emulator-silence-ms': String(KEEPALIVE_MS * 6),
      'x-emulator-ping-ms': String(KEEPALIVE_MS / 2),
    });
    const { events, comments } = parseSse(await readStream(res));
    expect(events.filter((e) => e.event === 'ping').length).toBeGreaterThanOrEqual(5);
    expect(comments).toEqual([]);
    expect(events.at(-1)?.event).toBe('message_stop');
  });

  it('an upstream that stops answering ends in a timeout_error event after the read timeout, not a hang', async () => {
    const started = Date.now();
    const res = await streamCall(impatient.url, {
      'x-emulator-scenario': 'long_silence',
      'x-emulator-silence-ms': '20000',
    });
    const { events } = parseSse(await readStream(res));
    expect(Date.now() - started).toBeLessThan(10_000);
    const last = events.at(-1)!;
    expect(last.event).toBe('error');
    expect(JSON.parse(last.data)).toMatchObject({ type: 'error', error: { type: 'timeout_error' } });
    expect(events.some((e) => e.event === 'content_block_delta')).toBe(true);
  });
});

describe('resumable streams', () => {
  it('a client drops after a few events; another instance replays exactly the rest; one call, billed with the final usage', async () => {
    const res = await streamCall(stack.gateway.url, { ...PACED, 'keygate-resumable': 'true' });
    expect(res.status).toBe(200);
    const callId = res.headers.get('keygate-call-id')!;
    expect(callId).toMatch(/^req_/);
    const upstreamId = res.headers.get('request-id');
    const first = parseSse(await readStream(res, (events) => events.length >= 5)).events;
    // At least five whole events (more when a chunk carries several), numbered from 1.
    expect(first.map((e) => e.id)).toEqual(first.map((_, i) => `${callId}:${i + 1}`));

    const again = await fetch(`${peer.url}/v1/messages/${callId}/events`, {
      headers: { authorization: `Bearer ${stack.appKey}`, 'last-event-id': first.at(-1)!.id! },
    });
    expect(again.status).toBe(200);
    expect(again.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const rest = parseSse(await readStream(again)).events;
    const all = [...first, ...rest];
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => `${callId}:${i + 1}`));
    expect(rest.at(-1)?.event).toBe('message_stop');

    // The emulator served one call and billed it whole; the call log has that one call and usage.
    const entry = await stack.emulator.ledger.waitFor((e) => e.requestId === upstreamId, 10_000);
    expect(entry.complete).toBe(true);
    expect(all.filter((e) => e.event !== 'ping').length).toBe(entry.eventsSent - 1);
    await expect
      .poll(async () => (await stack.calls()).filter((r) => r.id === callId).length, { timeout: 10_000 })
      .toBe(1);
    const row = (await stack.calls()).find((r) => r.id === callId)!;
    expect(row).toMatchObject({
      status: 200,
      partial: false,
      estimated: false,
      output_tokens: entry.usage!.output_tokens,
      input_tokens: entry.usage!.input_tokens,
    });
  });

  it('a resume without Last-Event-ID replays from the first event', async () => {
    const res = await streamCall(stack.gateway.url, { ...PACED, 'keygate-resumable': 'true' });
    const callId = res.headers.get('keygate-call-id')!;
    const full = parseSse(await readStream(res)).events;
    const replay = await fetch(`${peer.url}/v1/messages/${callId}/events`, {
      headers: { authorization: `Bearer ${stack.appKey}` },
    });
    expect(parseSse(await readStream(replay)).events).toEqual(full);
  });

  it("another account's key, or another key of the same account, is told the stream is unknown", async () => {
    const res = await streamCall(stack.gateway.url, { ...PACED, 'keygate-resumable': 'true' });
    const callId = res.headers.get('keygate-call-id')!;
    await readStream(res);
    const sibling = await stack.newKey({ app: 'other-app' });
    const other = await stack.seedAccount();
    const foreign = await createKey(stack.deps, {
      accountId: other.id,
      kind: 'live',
      memberId: null,
      app: null,
      environment: null,
    });
    for (const key of [sibling.secret, foreign.secret]) {
      const r = await fetch(`${peer.url}/v1/messages/${callId}/events`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(r.status).toBe(404);
      expect(await r.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    }
    const unknown = await fetch(`${peer.url}/v1/messages/req_doesnotexist/events`, {
      headers: { authorization: `Bearer ${stack.appKey}` },
    });
    expect(unknown.status).toBe(404);
    const bad = await fetch(`${peer.url}/v1/messages/${callId}/events`, {
      headers: { authorization: `Bearer ${stack.appKey}`, 'last-event-id': 'req_else:3' },
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('a key set to resumable streams keeps them without the header; a request can say no; the setting reaches every instance', async () => {
    const acct = await stack.seedAccount({ name: 'Resumable keys' });
    const admin = (path: string, body?: unknown) =>
      api(stack.gateway.url, `/v1/organizations${path}`, { key: acct.adminKey, body });
    const created = await admin('/api_keys', { name: 'mobile', resumable_streams: true });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'mobile', resumable_streams: true });
    const { id, key } = created.body as { id: string; key: string };

    // No header: the key's setting keeps the stream, and another instance resumes it.
    const res = await streamCall(stack.gateway.url, PACED, key);
    const callId = res.headers.get('keygate-call-id')!;
    expect(callId).toMatch(/^req_/);
    const first = parseSse(await readStream(res, (events) => events.length >= 3)).events;
    expect(first.map((e) => e.id)).toEqual(first.map((_, i) => `${callId}:${i + 1}`));
    const rest = parseSse(
      await readStream(
        await fetch(`${peer.url}/v1/messages/${callId}/events`, {
          headers: { authorization: `Bearer ${key}`, 'last-event-id': first.at(-1)!.id! },
        }),
      ),
    ).events;
    expect(rest[0]!.id).toBe(`${callId}:${first.length + 1}`);
    expect(rest.at(-1)!.event).toBe('message_stop');

    // keygate-resumable: false opts one call out.
    const declined = await streamCall(peer.url, { 'keygate-resumable': 'false' }, key);
    expect(declined.headers.get('keygate-call-id')).toBeNull();
    expect(parseSse(await readStream(declined)).events.every((e) => e.id === null)).toBe(true);

    // Turned off through the account API: both instances stop keeping the key's streams.
    const off = await admin(`/api_keys/${id}`, { resumable_streams: false });
    expect(off.body).toMatchObject({ id, resumable_streams: false });
    for (const url of [stack.gateway.url, peer.url]) {
      await waitFor(
        async () => {
          const r = await streamCall(url, {}, key);
          await readStream(r);
          return r.headers.get('keygate-call-id') === null;
        },
        { timeout: 5_000, what: `the setting to reach ${url}` },
      );
    }
    // …and the header still asks for one.
    const asked = await streamCall(peer.url, { 'keygate-resumable': 'true' }, key);
    expect(asked.headers.get('keygate-call-id')).toMatch(/^req_/);
    await readStream(asked);
  });

  it("a member's other key resumes the member's stream; another member's key of the same account cannot", async () => {
    const acct = await stack.seedAccount({ name: 'Members resume' });
    const admin = (path: string, body?: unknown) =>
      api(stack.gateway.url, `/v1/organizations${path}`, { key: acct.adminKey, body });
    const alice = (await admin('/users', { email: 'alice@resume.test' })).body.id as string;
    const bob = (await admin('/users', { email: 'bob@resume.test' })).body.id as string;
    const keyOf = async (member: string, name: string) =>
      (await admin('/api_keys', { member_id: member, name })).body.key as string;
    const [laptop, phone, bobs] = [
      await keyOf(alice, 'laptop'),
      await keyOf(alice, 'phone'),
      await keyOf(bob, 'bob'),
    ];
    const res = await streamCall(stack.gateway.url, { ...PACED, 'keygate-resumable': 'true' }, laptop);
    const callId = res.headers.get('keygate-call-id')!;
    const first = parseSse(await readStream(res, (events) => events.length >= 3)).events;
    const resume = (key: string) =>
      fetch(`${peer.url}/v1/messages/${callId}/events`, {
        headers: { authorization: `Bearer ${key}`, 'last-event-id': first.at(-1)!.id! },
      });
    const refused = await resume(bobs);
    expect(refused.status).toBe(404);
    expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const again = await resume(phone);
    expect(again.status).toBe(200);
    const rest = parseSse(await readStream(again)).events;
    expect(rest[0]!.id).toBe(`${callId}:${first.length + 1}`);
    expect(rest.at(-1)!.event).toBe('message_stop');
  });

  it('resumable streams are refused on an admin key, in the provider error shape', async () => {
    const acct = await stack.seedAccount({ name: 'Admin streams' });
    const refused = await api(stack.gateway.url, '/v1/organizations/api_keys', {
      key: acct.adminKey,
      body: { kind: 'admin', resumable_streams: true },
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: expect.stringMatching(/^resumable_streams: admin keys/),
      },
    });
    // Nor can an existing admin key be switched to it.
    const switched = await api(stack.gateway.url, `/v1/organizations/api_keys/${acct.adminKeyId}`, {
      key: acct.adminKey,
      body: { resumable_streams: true },
    });
    expect(switched.status).toBe(400);
    expect(switched.body.error.message).toMatch(/^resumable_streams: admin keys/);
    const wrongType = await api(stack.gateway.url, '/v1/organizations/api_keys', {
      key: acct.adminKey,
      body: { resumable_streams: 'yes' },
    });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error.message).toMatch(/resumable_streams/);
  });

  it('a call without keygate-resumable carries no ids and cannot be resumed', async () => {
    const res = await streamCall(stack.gateway.url, PACED);
    const requestId = res.headers.get('keygate-request-id')!;
    expect(res.headers.get('keygate-call-id')).toBeNull();
    const { events } = parseSse(await readStream(res));
    expect(events.every((e) => e.id === null)).toBe(true);
    const r = await fetch(`${peer.url}/v1/messages/${requestId}/events`, {
      headers: { authorization: `Bearer ${stack.appKey}` },
    });
    expect(r.status).toBe(404);
  });
});
