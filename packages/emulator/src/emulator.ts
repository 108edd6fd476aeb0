import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { createEmulatorHandler } from './router';
import type { Emulator, EmulatorOptions } from './types';

/**
 * Starts the emulator on loopback (a free port unless `port` is given).
 *
 * @example
 * const emulator = await startEmulator();
 * const client = new Anthropic({ baseURL: emulator.url, apiKey: emulator.apiKey!,
 *   defaultHeaders: { 'x-api-key': emulator.apiKey! } });
 * // … then: emulator.ledger.last()?.usage, await emulator.close()
 */
export async function startEmulator(opts: EmulatorOptions = {}): Promise<Emulator> {
  const handler = createEmulatorHandler(opts);
  const server = createServer({ keepAliveTimeout: 65_000 }, handler);
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const host = opts.host ?? '127.0.0.1';
  await listen(server, opts.port ?? 0, host);
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : (opts.port ?? 0);
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    apiKey: opts.apiKey === undefined ? 'sk-ant-emulator-key' : opts.apiKey,
    ledger: handler.ledger,
    cache: handler.cache,
    surface: handler.surface,
    server,
    get onRequest() {
      return handler.onRequest;
    },
    set onRequest(listener) {
      handler.onRequest = listener;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        for (const socket of sockets) socket.destroy();
      }),
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
