import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createEmulatorHandler, startEmulator, type ReceivedRequest } from '../src/index';
import { ask, KEY, post } from './helpers';

describe('hosting the emulator', () => {
  it('createEmulatorHandler mounts on any node:http server, with or without a pre-read body', async () => {
    const handler = createEmulatorHandler({ apiKey: null });
    const server = createServer((req, res) => {
      if (req.headers['x-preread'] !== '1') return handler(req, res);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => handler(req, res, Buffer.concat(chunks)));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const direct = await post({ url }, '/v1/messages', ask('mounted'), { 'x-api-key': 'kg-any' });
      const preread = await post({ url }, '/v1/messages', ask('mounted'), {
        'x-api-key': 'kg-any',
        'x-preread': '1',
      });
      expect([direct.status, preread.status]).toEqual([200, 200]);
      expect(handler.ledger.entries.map((e) => e.status)).toEqual([200, 200]);
    } finally {
      server.close();
    }
  });

  it('close() ends open streams at once', async () => {
    const emulator = await startEmulator();
    const res = await post(
      emulator,
      '/v1/messages',
      { ...ask('long'), stream: true },
      { 'x-emulator-scenario': 'paced', 'x-emulator-interval-ms': '1000' },
    );
    const started = performance.now();
    await emulator.close();
    expect(performance.now() - started).toBeLessThan(500);
    await expect(res.text()).rejects.toThrow();
    expect(emulator.ledger.last()).toMatchObject({ complete: false, endedAt: expect.any(Number) });
  });

  it('onRequest sees each answered request as it arrived: method, path, raw query, headers, body bytes', async () => {
    const emulator = await startEmulator();
    const seen: ReceivedRequest[] = [];
    try {
      const body =
        '{"model":"claude-haiku-4-5",  "max_tokens":8,"messages":[{"role":"user","content":"bytes, as sent"}]}';
      await post(emulator, '/v1/messages', 'unseen before the listener is set');
      emulator.onRequest = (r) => seen.push(r);
      await post(emulator, '/v1/messages?beta=true', body, { 'anthropic-beta': 'b-1,b-2' });
      await fetch(`${emulator.url}/v1/models?limit=1`, { headers: { 'x-api-key': KEY } });
      await post(emulator, '/v1/messages', body, { 'x-api-key': 'sk-ant-wrong' });
      emulator.onRequest = null;
      await post(emulator, '/v1/messages', body);
      expect(seen.map((r) => [r.method, r.path, r.query, r.body.toString()])).toEqual([
        ['POST', '/v1/messages', 'beta=true', body],
        ['GET', '/v1/models', 'limit=1', ''],
      ]);
      expect(seen[0]!.headers).toMatchObject({ 'anthropic-beta': 'b-1,b-2', 'x-api-key': KEY });
      expect(emulator.ledger.byRequestId(seen[0]!.requestId)).toMatchObject({
        endpoint: 'messages',
        status: 200,
      });
    } finally {
      await emulator.close();
    }
  });

  it('the CLI prints its URL and serves requests', async () => {
    const bin = fileURLToPath(new URL('../bin/keygate-emulator.js', import.meta.url));
    const child = spawn(process.execPath, [bin, '--port', '0', '--api-key', 'sk-ant-cli'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let out = '';
      for await (const chunk of child.stdout) {
        out += String(chunk);
        if (out.includes('KEYGATE_UPSTREAM_URL=')) break;
      }
      const url = /listening on (http:\/\/\S+)/.exec(out)![1]!;
      expect(out).toContain(`KEYGATE_UPSTREAM_URL=${url}`);
      const res = await fetch(`${url}/v1/models?limit=1`, { headers: { 'x-api-key': 'sk-ant-cli' } });
      expect(res.status).toBe(200);
      const refused = await fetch(`${url}/v1/models`, { headers: { 'x-api-key': KEY } });
      expect(refused.status).toBe(401);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });
});
