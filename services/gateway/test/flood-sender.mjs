// A client that streams a huge request body as fast as the server takes it, in a process of its
// own (so the test's probes do not share its event loop). One process serves every flood of a
// test file: it reads jobs as JSON lines on stdin ({id, port, path, total, chunked, headers,
// type, fill, method}) and prints one JSON line per answer, {id, status, contentType, body, sent},
// so a file that floods hundreds of routes starts one Node process, not hundreds.
import { connect } from 'node:net';
import { createInterface } from 'node:readline';

/** One request: its body (a form of "a" unless told) streamed until the server answers. */
function flood({ port, path, total, chunked = false, headers = [], type = '', fill = '', method = 'POST' }) {
  return new Promise((resolve) => {
    const chunk = Buffer.alloc(64 * 1024, fill || 'a');
    const framed = chunked
      ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])
      : chunk;
    let sent = 0;
    let received = Buffer.alloc(0);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('data', (d) => {
      received = Buffer.concat([received, d]);
      // A whole answer read: done, whether or not the server closes (the socket stays open for it).
      const end = received.indexOf('\r\n\r\n');
      const length =
        end === -1 ? null : /\r\ncontent-length: (\d+)/i.exec(received.subarray(0, end).toString())?.[1];
      if (length !== undefined && length !== null && received.length - end - 4 >= Number(length))
        socket.destroy();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      const text = received.toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      const contentType = /\r\ncontent-type: ([^\r]+)/i.exec(head)?.[1] ?? null;
      resolve({ status, contentType, body: body.slice(0, 2000), sent });
    });
    socket.once('connect', () => {
      const lines = [
        `${method} ${path} HTTP/1.1`,
        'host: g',
        `content-type: ${type || 'application/x-www-form-urlencoded'}`,
        chunked ? 'transfer-encoding: chunked' : `content-length: ${total}`,
        ...headers,
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      const pump = () => {
        while (sent < total && !socket.destroyed && received.length === 0) {
          // With a content-length, never a byte past it: a server parses what follows a body as the
          // next request, and answers that garbage with 400 and a reset that can drop the real answer.
          const piece = chunked ? framed : chunk.subarray(0, Math.min(chunk.length, total - sent));
          sent += chunked ? chunk.length : piece.length;
          if (!socket.write(piece)) return void socket.once('drain', pump);
        }
        // The body is whole: the answer is awaited on an open socket, as HTTP clients do. Half-closing
        // here (socket.end) made Node's server drop an answer still being worked out (its
        // httpAllowHalfOpen is off), which no real client would see; `connection: close` ends it.
        if (sent >= total && !socket.destroyed && chunked) socket.write('0\r\n\r\n');
      };
      pump();
    });
  });
}

// Ends with stdin: the test process that started it is gone or done.
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { id, ...job } = JSON.parse(line);
  flood(job).then((answer) => process.stdout.write(`${JSON.stringify({ id, ...answer })}\n`));
}
