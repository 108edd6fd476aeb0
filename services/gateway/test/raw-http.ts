import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ', '. */
  headers: Record<string, string>;
  body: Buffer;
}

export interface RawExchange {
  /** The first response, once complete; null when the connection closed first. */
  response: RawResponse | null;
  /** The server closed the connection (before `timeoutMs`). */
  closed: boolean;
  /** From the first byte sent to the response (or the close, or the timeout). */
  elapsedMs: number;
}

/** Bytes to send, or a pause between them. */
export type Part = Buffer | string | { pauseMs: number };

/**
 * Sends bytes on a raw TCP connection as given, pauses included, and reads the first HTTP
 * response. With `untilClose`, waits past the response for the server to close the connection.
 */
export function rawExchange(
  port: number,
  parts: Part[],
  opts: { timeoutMs?: number; untilClose?: boolean } = {},
): Promise<RawExchange> {
  const { timeoutMs = 10_000, untilClose = false } = opts;
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    const started = Date.now();
    let received = Buffer.alloc(0);
    let response: RawResponse | null = null;
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({
        response: response ?? parseResponse(received, true),
        closed,
        elapsedMs: Date.now() - started,
      });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      response ??= parseResponse(received, false);
      if (response && !untilClose) finish(false);
    });
    socket.on('error', () => {});
    socket.on('close', () => finish(true));
    socket.once('connect', async () => {
      for (const part of parts) {
        if (done || socket.destroyed || !socket.writable) return;
        if (typeof part === 'object' && 'pauseMs' in part)
          await new Promise((r) => setTimeout(r, part.pauseMs));
        else socket.write(part);
      }
    });
  });
}

/** A complete response from the bytes so far; with `eof`, a body delimited by the close. */
export function parseResponse(bytes: Buffer, eof: boolean): RawResponse | null {
  const end = bytes.indexOf('\r\n\r\n');
  if (end === -1) return null;
  const [statusLine, ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine!)?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    const name = line.slice(0, i).trim().toLowerCase();
    const value = line.slice(i + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const rest = bytes.subarray(end + 4);
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    return rest.length >= length ? { status, headers, body: rest.subarray(0, length) } : null;
  }
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const body = dechunk(rest);
    return body ? { status, headers, body } : null;
  }
  return eof ? { status, headers, body: rest } : null;
}

function dechunk(bytes: Buffer): Buffer | null {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = bytes.indexOf('\r\n', at);
    if (eol === -1) return null;
    const size = Number.parseInt(bytes.subarray(at, eol).toString('latin1'), 16);
    if (size === 0) return Buffer.concat(parts);
    if (bytes.length < eol + 2 + size + 2) return null;
    parts.push(bytes.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/** A request head as bytes: request line, headers in order (repeats allowed), blank line. */
export function head(method: string, path: string, headers: Array<[string, string]>): string {
  return `${method} ${path} HTTP/1.1\r\n${headers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n`;
}

/** Asserts the provider's error shape; returns the parsed body. */
export function errorShape(r: RawResponse): {
  type: string;
  error: { type: string; message: string };
  request_id: string;
} {
  const body = JSON.parse(r.body.toString('utf8'));
  if (
    body?.type !== 'error' ||
    typeof body.error?.type !== 'string' ||
    typeof body.error?.message !== 'string'
  ) {
    throw new Error(`not the provider's error shape (${r.status}): ${r.body.toString('utf8').slice(0, 300)}`);
  }
  if (!r.headers['request-id'] || body.request_id !== r.headers['request-id'])
    throw new Error(`request id missing or different: ${JSON.stringify(r.headers)} ${body.request_id}`);
  return body;
}
