import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const MB = 1024 * 1024;
const SENDER = join(import.meta.dirname, '..', 'flood-sender.mjs');

/** A process's resident memory, from the kernel. */
export const rssOf = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

export interface Flooded {
  status: number;
  contentType: string | null;
  body: string;
  sent: number;
}

export interface FloodOptions {
  chunked?: boolean;
  headers?: string[];
  type?: string;
  fill?: string;
  /** POST unless told. */
  method?: string;
}

interface Sender {
  proc: ChildProcess;
  waiting: Map<number, (answer: Flooded) => void>;
  next: number;
}
let sender: Sender | null = null;

/** The file's one sender process, started on first use; it holds the test process open only while a flood is out. */
function floodSender(): Sender {
  if (sender && sender.proc.exitCode === null) return sender;
  const proc = spawn(process.execPath, [SENDER], { stdio: ['pipe', 'pipe', 'inherit'] });
  const started: Sender = { proc, waiting: new Map(), next: 0 };
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    const { id, ...answer } = JSON.parse(line) as Flooded & { id: number };
    started.waiting.get(id)?.(answer);
    started.waiting.delete(id);
    if (started.waiting.size === 0) proc.unref();
  });
  proc.on('exit', (code) => {
    for (const done of started.waiting.values())
      done({ status: 0, contentType: null, body: `the flood sender exited (${code})`, sent: 0 });
    started.waiting.clear();
  });
  for (const stream of [proc.stdin, proc.stdout] as unknown as { unref(): void }[]) stream.unref();
  sender = started;
  return started;
}

/** Ends the sender process (its stdin closes); a later flood starts another. */
export function stopFloodSender(): void {
  sender?.proc.stdin?.end();
  sender = null;
}

/** Streams `total` bytes as a request body from the sender's process; the answer, if one came. */
export function flood(port: number, path: string, total: number, opts: FloodOptions = {}): Promise<Flooded> {
  const s = floodSender();
  const id = s.next++;
  s.proc.ref();
  return new Promise((resolve) => {
    s.waiting.set(id, resolve);
    const job = { id, port, path, total, chunked: opts.chunked ?? false, headers: opts.headers ?? [] };
    s.proc.stdin!.write(
      `${JSON.stringify({ ...job, type: opts.type ?? '', fill: opts.fill ?? '', method: opts.method ?? 'POST' })}\n`,
    );
  });
}

export interface UnderLoad<T> {
  result: T;
  p99: number;
  max: number;
  samples: number;
  rssGrowthMb: number;
}

/** `/healthz` of the gateway at `url` (process `pid`) answered every 10 ms while `work` runs: the latencies, and the peak RSS growth. */
export async function underLoad<T>(url: string, pid: number, work: () => Promise<T>): Promise<UnderLoad<T>> {
  // Warm: the probe's own first connection is not the gateway's latency.
  for (let i = 0; i < 20; i++) await (await fetch(`${url}/healthz`)).text();
  const before = rssOf(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 10);
  const latencies: number[] = [];
  let running = true;
  const probe = (async () => {
    while (running) {
      const t = performance.now();
      const res = await fetch(`${url}/healthz`);
      await res.text();
      latencies.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  let result: T;
  try {
    result = await work();
  } finally {
    running = false;
    clearInterval(sampler);
    // The probe in flight counts too: during a stall it is the one that waits.
    await probe;
  }
  return {
    result,
    p99: percentile(latencies, 0.99),
    max: Math.max(...latencies),
    samples: latencies.length,
    rssGrowthMb: (peak - before) / MB,
  };
}

export const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? 0;
