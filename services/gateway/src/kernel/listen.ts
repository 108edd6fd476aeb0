import { serve, type ServerType } from '@hono/node-server';
import {
  createServer,
  maxHeaderSize,
  type IncomingMessage,
  type ServerOptions,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import type { Config } from '../config';
import { StartupError } from '../lib/data-dir';
import { newRequestId, parserRefusal } from '../lib/errors';
import type { Logger } from '../lib/logger';
import { serverOptions } from '../lib/server-limits';

/** The port is taken (another gateway, or another program). */
export class PortInUseError extends StartupError {}

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

export function listen(
  fetch: (req: Request, env: any) => Response | Promise<Response>,
  config: Config,
  logger: Logger,
  fastPath: (req: IncomingMessage, res: ServerResponse) => boolean,
): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve(
      {
        fetch,
        port: config.port,
        hostname: config.host,
        serverOptions: serverOptions(config),
        // The fast path takes `POST /v1/messages`; every other request goes to the app.
        createServer: ((options: ServerOptions, app: Listener) =>
          createServer(options, (req, res) => {
            if (!fastPath(req, res)) app(req, res);
          })) as typeof createServer,
      },
      () => resolve(server),
    );
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE')
        reject(
          new PortInUseError(
            `port ${config.port} on ${config.host} is already in use (another gateway, or another program); stop it or set PORT`,
          ),
        );
      else if (err.code === 'EACCES')
        reject(
          new PortInUseError(
            `not allowed to listen on port ${config.port} on ${config.host}; choose another PORT`,
          ),
        );
      else reject(err);
    });
    if ('requestTimeout' in server) {
      const answered = new WeakSet<Socket>();
      server.on('clientError', (err: Error, socket: Socket) => {
        // The parser stays failed and reports every further chunk of the same connection.
        if (answered.has(socket)) return;
        answered.add(socket);
        refuseUnparsed(err, socket, maxHeaderSize, logger);
      });
    }
  });
}

/**
 * Answers what Node's HTTP parser refused before the app ran (a header block over the limit,
 * a malformed request line or header) in the provider's shape, then closes the connection:
 * the parser cannot read another request from it. The close waits for the client to read
 * the answer (at most a second): closing with unread request bytes resets the connection,
 * and the client may then lose the answer.
 */
function refuseUnparsed(
  err: Error & { code?: string },
  socket: Socket,
  maxHeaderBytes: number,
  logger: Logger,
): void {
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const requestId = newRequestId();
  const refusal = parserRefusal(err, requestId, maxHeaderBytes);
  logger.info('request refused by the HTTP parser', { requestId, status: refusal.status, code: err.code });
  socket.end(refusal.http);
  const linger = setTimeout(() => socket.destroy(), 1_000);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
}
