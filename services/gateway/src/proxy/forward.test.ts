import {
  createServer,
  request,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/kit/wait';
import type { Principal } from '../auth/resolver';
import type { GatewayError } from '../lib/errors';
import { silentLogger } from '../lib/logger';
import type { CallRecord } from '../lib/call-record';
import { forward } from './forward';

const principal = {
  key: { id: 'key_1', accountId: 'acct_1', memberId: null, app: null, environment: null },
} as unknown as Principal;
const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const START = frame('message_start', {
  type: 'message_start',
  message: { id: 'msg_1', model: 'claude-x', usage: { input_tokens: 7, output_tokens: 1 } },
});
const REST =
  frame('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn' },
    usage: { output_tokens: 9 },
  }) + frame('message_stop', { type: 'message_stop' });

const servers: Server[] = [];
const dispatcher = new Agent();
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function listen(handler: RequestListener): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A gateway reduced to forward(): every call goes to `upstream`; records and errors are collected. */
async function gateway(upstream: string, timeoutMs = 5_000, body: Buffer | null = null) {
  const records: CallRecord[] = [];
  const errors: unknown[] = [];
  /** What each write to a client's socket carried, in order (a writev is one write). */
  const writes: string[] = [];
  const calls: { body: Buffer | null }[] = [];
  const url = await listen((req, res) => {
    const socket = req.socket as unknown as SocketWrites;
    if (!writes.length) {
      const write = socket._write.bind(socket);
      const writev = socket._writev.bind(socket);
      socket._write = (chunk, encoding, cb) => {
        writes.push(String(chunk));
        write(chunk, encoding, cb);
      };
      socket._writev = (chunks, cb) => {
        writes.push(chunks.map((c) => String(c.chunk)).join(''));
        writev(chunks, cb);
      };
    }
    const call = {
      req,
      res,
      principal,
      target: { baseUrl: upstream, apiKey: 'sk-ant-test' },
      endpoint: 'messages' as const,
      path: req.url!,
      body,
      model: null,
      stream: true,
      resumable: false,
      requestId: 'req_test',
      groupId: null,
      client: null,
      retryCount: 0,
      startedAt: performance.now(),
      createdAt: new Date(),
    };
    calls.push(call);
    forward(call, { dispatcher, timeoutMs, record: (r) => records.push(r), logger: silentLogger }).catch(
      (err) => {
        errors.push(err);
        res.writeHead((err as GatewayError).status).end();
      },
    );
  });
  return { url, records, errors, writes, calls };
}

interface SocketWrites {
  _write(chunk: unknown, encoding: string, cb: (err?: Error | null) => void): void;
  _writev(chunks: { chunk: unknown }[], cb: (err?: Error | null) => void): void;
}

function get(url: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => request(url, resolve).on('error', reject).end());
}

const sse = (res: ServerResponse) =>
  res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req_up' });

describe('forward', () => {
  it('passes each event on as it arrives, and records the usage read on the way', async () => {
    let clientSawStart!: () => void;
    const seen = new Promise<void>((r) => (clientSawStart = r));
    const upstream = await listen(async (_req, res) => {
      sse(res);
      res.write(START);
      // The rest is only sent once the client holds the first event: a gateway that buffered would never get here.
      await seen;
      res.end(REST);
    });
    const gw = await gateway(upstream);
    const res = await get(`${gw.url}/v1/messages`);
    let text = '';
    for await (const chunk of res) {
      text += chunk;
      if (text.includes('message_start')) clientSawStart();
    }
    expect(text).toBe(START + REST);
    expect(gw.records).toMatchObject([
      {
        status: 200,
        partial: false,
        errorType: null,
        upstreamMessageId: 'msg_1',
        upstreamRequestId: 'req_up',
        usage: { input_tokens: 7, output_tokens: 9 },
      },
    ]);
  });

  it('answers a stream head at once when the first event is held back, and with the first event when both come together', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const upstream = await listen(async (req, res) => {
      sse(res);
      if (req.url === '/held') {
        // The head alone: the first event waits until the client has seen the head.
        res.flushHeaders();
        await held;
      }
      res.end(START + REST);
    });
    const gw = await gateway(upstream);
    const res = await get(`${gw.url}/held`);
    expect(res.headers['content-type']).toBe('text/event-stream');
    release();
    let text = '';
    for await (const chunk of res) text += chunk;
    expect(text).toBe(START + REST);
    // Together: the head and the first events leave the gateway in one write (the head was
    // flushed on its own before the first event, a syscall more per call).
    const together = await gateway(upstream);
    const res2 = await get(`${together.url}/together`);
    res2.resume();
    await once(res2, 'end');
    expect(together.writes[0]).toMatch(/^HTTP\/1\.1 200[\s\S]*\r\n\r\n[\s\S]*message_start/);
  });

  it('lets go of the request bytes once the answer is taken, and records their size', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const upstream = await listen(async (req, res) => {
      req.resume();
      await once(req, 'end');
      sse(res);
      res.write(START);
      await held;
      res.end(REST);
    });
    const body = Buffer.alloc(300 * 1024, 'a');
    const gw = await gateway(upstream, 5_000, body);
    const res = await new Promise<IncomingMessage>((resolve, reject) =>
      request(`${gw.url}/v1/messages`, { method: 'POST' }, resolve).on('error', reject).end(),
    );
    await once(res, 'data');
    // Mid-stream: the call no longer holds its body.
    expect(gw.calls[0]!.body).toBeNull();
    release();
    res.resume();
    await expect.poll(() => gw.records.length).toBe(1);
    expect(gw.records[0]).toMatchObject({ status: 200, requestBytes: body.length });
  });

  it('a client that leaves mid-stream aborts the upstream request, and the call is recorded as client_closed', async () => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((r) => (upstreamClosed = r));
    const upstream = await listen((_req, res) => {
      sse(res);
      res.write(START);
      res.on('close', upstreamClosed);
    });
    const gw = await gateway(upstream);
    const res = await get(`${gw.url}/v1/messages`);
    await once(res, 'data');
    res.destroy();
    await closed;
    await expect.poll(() => gw.records.length).toBe(1);
    expect(gw.records[0]).toMatchObject({
      status: 200,
      partial: true,
      errorType: 'client_closed',
      usage: { input_tokens: 7 },
    });
  });

  it('an upstream that stalls mid-stream past the read timeout: the stream ends in a timeout_error event, output estimated from the content forwarded', async () => {
    const text = 'Forty-two characters of generated text ok.';
    const delta = frame('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text },
    });
    const upstream = await listen((_req, res) => {
      sse(res);
      res.write(START + delta + delta);
    });
    const gw = await gateway(upstream, 300);
    const res = await get(`${gw.url}/v1/messages`);
    let got = '';
    await new Promise<void>((resolve) => {
      res
        .on('data', (c) => (got += c))
        .on('close', resolve)
        .on('error', () => resolve());
    });
    expect(got.startsWith(START + delta + delta)).toBe(true);
    const tail = got.slice((START + delta + delta).length);
    expect(tail).toMatch(/^event: error\ndata: .*\n\n$/);
    expect(JSON.parse(tail.split('\n')[1]!.slice(6))).toEqual({
      type: 'error',
      error: { type: 'timeout_error', message: expect.stringContaining('sent nothing for') },
      request_id: 'req_test',
    });
    await expect.poll(() => gw.records.length).toBe(1);
    expect(gw.records[0]).toMatchObject({
      status: 200,
      partial: true,
      errorType: 'timeout_error',
      estimated: true,
      usage: { input_tokens: 7, output_tokens: Math.ceil((2 * text.length) / 3.5) },
    });
  });

  it('a complete stream keeps the provider count and is not estimated', async () => {
    const upstream = await listen((_req, res) => {
      sse(res);
      res.end(
        START +
          frame('content_block_delta', {
            type: 'content_block_delta',
            index: 0,
            delta: { type: 'text_delta', text: 'x'.repeat(400) },
          }) +
          REST,
      );
    });
    const gw = await gateway(upstream);
    await new Promise<void>(
      (resolve) => void get(`${gw.url}/v1/messages`).then((res) => res.resume().on('end', resolve)),
    );
    await expect.poll(() => gw.records.length).toBe(1);
    expect(gw.records[0]).toMatchObject({ partial: false, estimated: false, usage: { output_tokens: 9 } });
  });

  it('a client that reads slowly holds the upstream back instead of filling memory', async () => {
    const total = 64 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let written = 0;
    let heldBack = false;
    const upstream = await listen(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      while (written < total) {
        written += chunk.length;
        if (!res.write(chunk)) {
          heldBack = true;
          await once(res, 'drain');
        }
      }
      res.end();
    });
    const gw = await gateway(upstream);
    const res = await get(`${gw.url}/v1/messages`);
    res.pause();
    // The upstream's socket fills and it waits for 'drain': the gateway stopped reading it.
    await waitFor(() => heldBack, { timeout: 20_000, what: 'the upstream to be held back' });
    expect(written).toBeLessThan(total);
    let received = 0;
    for await (const c of res) received += (c as Buffer).length;
    expect(received).toBe(total);
    // 64 MB through two sockets: under a second on a quiet machine, over five on a busy one.
  }, 30_000);

  it('an upstream that cannot be reached is a 502 api_error, safe to retry, and is recorded', async () => {
    const dead = await listen(() => {});
    servers[0]!.close();
    servers.splice(0, 1);
    const gw = await gateway(dead);
    const res = await get(`${gw.url}/v1/messages`);
    expect(res.statusCode).toBe(502);
    expect(gw.errors[0]).toMatchObject({ type: 'api_error', headers: { 'x-should-retry': 'true' } });
    expect(gw.records).toMatchObject([{ status: 502, errorType: 'api_error', partial: false }]);
  });

  it('a client gone before forwarding starts (left while limits were checked): nothing is sent upstream, the call is recorded', async () => {
    let upstreamCalls = 0;
    const upstream = await listen((_req, res) => {
      upstreamCalls++;
      sse(res);
      res.end(START + REST);
    });
    const records: CallRecord[] = [];
    const url = await listen(async (req, res) => {
      // Gone, and its 'close' already emitted, before forward() is called.
      res.destroy();
      await once(res, 'close');
      const call = {
        req,
        res,
        principal,
        target: { baseUrl: upstream, apiKey: 'sk-ant-test' },
        endpoint: 'messages' as const,
        path: req.url!,
        body: null,
        model: null,
        stream: true,
        resumable: false,
        requestId: 'req_gone',
        groupId: null,
        client: null,
        retryCount: 0,
        startedAt: performance.now(),
        createdAt: new Date(),
      };
      void forward(call, {
        dispatcher,
        timeoutMs: 5_000,
        record: (r) => records.push(r),
        logger: silentLogger,
      });
    });
    await get(url).catch(() => null);
    await waitFor(() => records.length > 0, { timeout: 1_000, what: 'the call record' });
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      id: 'req_gone',
      status: 499,
      errorType: 'client_closed',
      partial: true,
      usage: null,
    });
    expect(upstreamCalls).toBe(0);
  });
});
