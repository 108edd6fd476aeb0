import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';

const HOP_BY_HOP = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
]);

function without(
  headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

export interface Floor {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/**
 * The floor: the least a proxy can do in Node. A bare node:http server streams each request
 * to the upstream with undici.request (keep-alive pool) and pipes the answer back with
 * stream.pipeline; a client that leaves aborts the upstream request.
 */
export async function startFloor(upstream: string, port = 0): Promise<Floor> {
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: null });
  const server = createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    request(upstream + req.url, {
      method: req.method as Dispatcher.HttpMethod,
      headers: without(req.headers),
      body: hasBody ? req : null,
      dispatcher,
      signal: abort.signal,
    }).then(
      (up) => {
        res.writeHead(up.statusCode, without(up.headers));
        pipeline(up.body, res, () => {});
      },
      () => {
        if (res.headersSent) return res.destroy();
        res
          .writeHead(502, { 'content-type': 'application/json' })
          .end('{"type":"error","error":{"type":"api_error","message":"upstream"}}');
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await dispatcher.close();
    },
  };
}
