import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

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

/** Streams `total` bytes as a request body from a process of its own; the answer, if one came. */
export function flood(port: number, path: string, total: number, opts: FloodOptions = {}): Promise<Flooded> {
  return new Promise((resolve, reject) => {
    const args = [SENDER, String(port), path, String(total), opts.chunked ? 'chunked' : 'length'];
    const body = [
      JSON.stringify(opts.headers ?? []),
      opts.type ?? '',
      opts.fill ?? '',
      opts.method ?? 'POST',
    ];
    execFile(process.execPath, [...args, ...body], { maxBuffer: 1024 * 1024 }, (err, stdout) =>
      err ? reject(err) : resolve(JSON.parse(stdout) as Flooded),
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
