import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

export interface SerialRun {
  /** Every request's latency, ms: from writing the request to the last byte of its answer. */
  samples: number[];
  errors: number;
}

const HEADER_END = Buffer.from('\r\n\r\n');
const LAST_CHUNK = Buffer.from('\r\n0\r\n\r\n');

/**
 * Concurrency 1 over one keep-alive connection, with the request bytes prepared once and the
 * answer framed by its content-length (or, for a stream, its last chunk): the client adds a few µs and allocates almost nothing,
 * so every sample is kept and percentiles are exact. (wrk's latency histogram at c=1
 * disagreed with its own request count here, so it is used for throughput only.)
 */
export function serialRun(
  url: string,
  headers: Record<string, string>,
  body: Buffer,
  seconds: number,
): Promise<SerialRun> {
  const u = new URL(url);
  const head = Object.entries({ host: u.host, 'content-length': String(body.length), ...headers })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const request = Buffer.concat([Buffer.from(`POST ${u.pathname} HTTP/1.1\r\n${head}\r\n`), body]);
  const samples: number[] = [];
  let errors = 0;
  return new Promise((resolve, reject) => {
    const end = performance.now() + seconds * 1000;
    let buf: Buffer = Buffer.alloc(0);
    let start = 0;
    let done = false;
    let socket: Socket;
    const send = () => {
      if (performance.now() >= end) {
        done = true;
        socket.destroy();
        return resolve({ samples, errors });
      }
      start = performance.now();
      socket.write(request);
    };
    // A server may close a keep-alive connection (an answer with `connection: close`, its idle
    // timeout): the request in flight, if any, counts as an error and a new connection goes on.
    // Without this a closed socket left the run waiting forever.
    const open = () => {
      socket = connect(Number(u.port), u.hostname);
      socket.setNoDelay(true);
      socket.on('connect', send);
      socket.on('error', (err) => {
        if (!done && samples.length === 0 && errors === 0) reject(err);
      });
      socket.on('close', () => {
        if (done) return;
        if (start > 0) {
          errors++;
          console.warn(`serial: ${url} closed the connection with a request in flight`);
        }
        buf = Buffer.alloc(0);
        start = 0;
        if (performance.now() >= end) {
          done = true;
          return resolve({ samples, errors });
        }
        open();
      });
      socket.on('data', onData);
    };
    const onData = (chunk: Buffer) => {
      const now = performance.now();
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      const headerEnd = buf.indexOf(HEADER_END);
      if (headerEnd === -1) return;
      const headText = buf.toString('latin1', 0, headerEnd);
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(headText);
      if (length) {
        const total = headerEnd + 4 + Number(length[1]);
        if (buf.length < total) return;
        if (buf.length > total) return reject(new Error(`unexpected bytes after the answer from ${url}`));
      } else if (/\r\ntransfer-encoding:\s*chunked/i.test(headText)) {
        // A stream: complete at its last chunk (no trailers are sent here).
        if (!buf.subarray(buf.length - LAST_CHUNK.length).equals(LAST_CHUNK)) return;
      } else return reject(new Error(`no content-length in the answer from ${url}:\n${headText}`));
      if (!headText.startsWith('HTTP/1.1 200')) errors++;
      samples.push(now - start);
      buf = Buffer.alloc(0);
      start = 0;
      if (/\r\nconnection:\s*close/i.test(headText)) {
        console.warn(`serial: ${url} answered connection: close (${headText.split('\r\n', 1)[0]})`);
        socket.destroy();
        return;
      }
      send();
    };
    open();
  });
}
