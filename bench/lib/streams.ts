import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';

const LF = 0x0a;
const client = new Agent({ connections: null, keepAliveTimeout: 10_000 });

export interface StreamTarget {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface StreamTiming {
  status: number;
  /** When each event's closing blank line arrived, in ms from the request's start. */
  arrivals: number[];
}

/** Streams one answer, noting when each server-sent event completes. */
export async function timeStream(t: StreamTarget): Promise<StreamTiming> {
  const start = performance.now();
  const res = await request(t.url, { method: 'POST', headers: t.headers, body: t.body, dispatcher: client });
  const arrivals: number[] = [];
  let prev = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    const at = performance.now() - start;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (b === LF && prev === LF) arrivals.push(at);
      prev = b;
    }
  }
  return { status: res.statusCode, arrivals };
}

export interface HeldStreams {
  /** Streams that answered 200 and delivered their first event. */
  opened: number;
  /** Events received so far, per stream. */
  events(): number[];
  /** Aborts every stream, as a client going away would. */
  abort(): void;
}

/** Opens `n` slow streams, `batch` at a time, and keeps them open until `abort()`. */
export async function holdStreams(t: StreamTarget, n: number, batch = 100): Promise<HeldStreams> {
  const controller = new AbortController();
  setMaxListeners(n + 10, controller.signal);
  const counts = new Array<number>(n).fill(0);
  const openOne = (i: number) =>
    new Promise<boolean>((resolve) => {
      let prev = 0;
      request(t.url, {
        method: 'POST',
        headers: t.headers,
        body: t.body,
        dispatcher: client,
        signal: controller.signal,
      }).then(
        (res) => {
          if (res.statusCode !== 200) return resolve(false);
          res.body.on('data', (chunk: Buffer) => {
            for (let j = 0; j < chunk.length; j++) {
              if (chunk[j] === LF && prev === LF && counts[i]!++ === 0) resolve(true);
              prev = chunk[j]!;
            }
          });
          res.body.on('error', () => resolve(false));
          res.body.on('end', () => resolve(counts[i]! > 0));
        },
        () => resolve(false),
      );
    });
  let opened = 0;
  for (let from = 0; from < n; from += batch) {
    const ok = await Promise.all(
      Array.from({ length: Math.min(batch, n - from) }, (_, k) => openOne(from + k)),
    );
    opened += ok.filter(Boolean).length;
  }
  return { opened, events: () => [...counts], abort: () => controller.abort() };
}

export function closeStreamClient(): Promise<void> {
  return client.close();
}
