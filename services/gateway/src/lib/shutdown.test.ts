import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger';
import { drainServer } from './shutdown';

describe('drainServer', () => {
  it('a hurry during the grace ends the calls in flight at once, then closes', async () => {
    const open = new Set<ServerResponse>();
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: ping\n\n');
      open.add(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const body = new Promise<string>((resolve) =>
      request({ port, host: '127.0.0.1' }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve(text));
        res.on('error', () => resolve(text));
      }).end(),
    );
    await expect.poll(() => open.size).toBe(1);
    const logs: string[] = [];
    const hurry = new AbortController();
    const started = performance.now();
    const drained = drainServer(server, {
      graceMs: 60_000,
      hurry: hurry.signal,
      logger: createLogger('warn', (l) => logs.push(l)),
      endInFlight: () => {
        for (const res of open) res.end('event: error\n\n');
        return open.size;
      },
    });
    hurry.abort();
    await drained;
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(await body).toBe('event: ping\n\nevent: error\n\n');
    expect(logs.join('\n')).toContain('shutdown hurried: calls in flight ended');
  });
});
