import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import type { Arm } from './arms';
import { postgresCpuMs, withRssSampling } from './arms';
import { median, shuffled } from './stats';
import { holdStreams, timeStream, type StreamTarget } from './streams';
import { serialRun } from './serial';
import { runWrk, type WrkRun } from './wrk';

/** One arm as the client sees it: where to send a messages request, and with which credential. */
export interface Target {
  name: string;
  arm: Arm;
  url: string;
  headers: Record<string, string>;
}

export interface LoadRun extends WrkRun {
  /** CPU used by the arm's own process during the run, ms. */
  armCpuMs: number;
  /** CPU used by the arm's main thread (the one serving requests) during the run, ms. */
  mainThreadCpuMs: number;
  /** CPU used by the local PostgreSQL server during the run, ms. */
  postgresCpuMs: number;
}

/** Interleaved rounds of wrk runs: each round visits every arm once, in a fresh order. */
export async function wrkRounds(
  targets: Target[],
  o: { bodyFile: string; connections: number; seconds: number; rounds: number },
): Promise<Map<string, LoadRun[]>> {
  const out = new Map<string, LoadRun[]>(targets.map((t) => [t.name, []]));
  for (let r = 0; r < o.rounds; r++) {
    for (const t of shuffled(targets)) {
      const [arm0, main0, pg0] = [t.arm.cpuMs(), t.arm.mainThreadCpuMs(), postgresCpuMs()];
      const run = await runWrk({
        url: t.url,
        headers: t.headers,
        bodyFile: o.bodyFile,
        connections: o.connections,
        seconds: o.seconds,
      });
      out.get(t.name)!.push({
        ...run,
        armCpuMs: t.arm.cpuMs() - arm0,
        mainThreadCpuMs: t.arm.mainThreadCpuMs() - main0,
        postgresCpuMs: postgresCpuMs() - pg0,
      });
    }
  }
  return out;
}

export interface SerialFigures {
  /** Every sample of every round, ms. */
  samples: number[];
  errors: number;
}

/** Concurrency 1 in interleaved rounds; all samples are kept. */
export async function serialRounds(
  targets: Target[],
  o: { body: Buffer; seconds: number; rounds: number },
): Promise<Map<string, SerialFigures>> {
  const out = new Map<string, SerialFigures>(targets.map((t) => [t.name, { samples: [], errors: 0 }]));
  for (let r = 0; r < o.rounds; r++) {
    for (const t of shuffled(targets)) {
      const run = await serialRun(t.url, t.headers, o.body, o.seconds);
      const fig = out.get(t.name)!;
      for (const v of run.samples) fig.samples.push(v);
      fig.errors += run.errors;
    }
  }
  return out;
}

export interface Saturation {
  runs: Map<number, Map<string, LoadRun[]>>;
  /** Highest RSS seen per arm process while the load ran, in MB. */
  maxRss: Map<string, number>;
}

export async function saturation(
  targets: Target[],
  o: { bodyFile: string; connections: number[]; seconds: number; rounds: number },
): Promise<Saturation> {
  const arms = [...new Map(targets.map((t) => [t.arm.name, t.arm])).values()];
  const { result, maxRss } = await withRssSampling(arms, async () => {
    const runs = new Map<number, Map<string, LoadRun[]>>();
    for (const c of o.connections) runs.set(c, await wrkRounds(targets, { ...o, connections: c }));
    return runs;
  });
  return { runs: result, maxRss };
}

export interface StreamFigures {
  /** Time to the first complete event, per stream, ms. */
  ttfe: number[];
  /** Gaps between consecutive paced events (> 1 ms apart), ms. */
  gaps: number[];
  /** Events received, per stream. */
  events: number[];
  failed: number;
}

/**
 * Paced streams through each arm, interleaved by round. Starts are spaced `spacingMs` apart so
 * no two requests meet at the emulator at once: the first event then measures the path, not a queue.
 */
export async function streaming(
  targets: (StreamTarget & { name: string })[],
  o: { rounds: number; perRound: number; spacingMs: number },
): Promise<Map<string, StreamFigures>> {
  const out = new Map<string, StreamFigures>(
    targets.map((t) => [t.name, { ttfe: [], gaps: [], events: [], failed: 0 }]),
  );
  for (let r = 0; r < o.rounds; r++) {
    for (const t of shuffled(targets)) {
      const fig = out.get(t.name)!;
      const timings = await Promise.all(
        Array.from({ length: o.perRound }, (_, i) => sleep(i * o.spacingMs).then(() => timeStream(t))),
      );
      for (const s of timings) {
        if (s.status !== 200 || s.arrivals.length === 0) fig.failed++;
        fig.ttfe.push(s.arrivals[0] ?? Number.NaN);
        fig.events.push(s.arrivals.length);
        for (let i = 1; i < s.arrivals.length; i++) {
          const gap = s.arrivals[i]! - s.arrivals[i - 1]!;
          if (gap > 1) fig.gaps.push(gap);
        }
      }
    }
  }
  return out;
}

export interface HeldFigures {
  requested: number;
  opened: number;
  /** Streams still flowing when measured (a new event since all were open). */
  flowing: number;
  rssBefore: number;
  /** RSS with half, then all of the streams open, MB. */
  rssHalf: number;
  rssOpen: number;
  /** JS heap in use per 1,000 open streams (same slope), MB. */
  heapPerThousand: number;
  /**
   * RSS growth per 1,000 open streams, MB: the slope between half and all of them open,
   * so fixed costs of going from idle to busy (the young generation growing) are left out.
   */
  perThousand: number;
}

/**
 * Opens `n` slow streams through one arm in two halves, reads its RSS after each (after a
 * full GC, in an arm that has served nothing else), then aborts them all.
 */
export async function heldStreams(t: StreamTarget & { arm: Arm }, n: number): Promise<HeldFigures> {
  const settled = async () => {
    await sleep(1_000);
    const heap = await t.arm.gc();
    const samples: number[] = [];
    for (let i = 0; i < 5; i++) {
      await sleep(200);
      samples.push(t.arm.rss());
    }
    return { rss: median(samples), heap };
  };
  const before = await settled();
  const first = await holdStreams(t, n / 2);
  const half = await settled();
  const second = await holdStreams(t, n / 2);
  const atOpen = [...first.events(), ...second.events()];
  const open = await settled();
  const flowing = [...first.events(), ...second.events()].filter((e, i) => e > atOpen[i]!).length;
  first.abort();
  second.abort();
  await sleep(1_000);
  const opened = first.opened + second.opened;
  const slope = (a: number, b: number) => ((b - a) / Math.max(1, second.opened)) * 1000;
  return {
    requested: n,
    opened,
    flowing,
    rssBefore: before.rss,
    rssHalf: half.rss,
    rssOpen: open.rss,
    perThousand: slope(half.rss, open.rss),
    heapPerThousand: slope(half.heap, open.heap),
  };
}

export interface LargeBodyFigures {
  latencies: number[];
  statuses: number[];
  /** Peak RSS of the arm's process during each request, MB. */
  peaks: number[];
  rssBefore: number;
}

const bigClient = new Agent({ connections: 4, bodyTimeout: 120_000, headersTimeout: 120_000 });

/** Sends one large body at a time through each arm, interleaved by round. */
export async function largeBodies(
  targets: Target[],
  body: Buffer,
  rounds: number,
): Promise<Map<string, LargeBodyFigures>> {
  const out = new Map<string, LargeBodyFigures>(
    targets.map((t) => [t.name, { latencies: [], statuses: [], peaks: [], rssBefore: t.arm.rss() }]),
  );
  for (let r = 0; r < rounds; r++) {
    for (const t of shuffled(targets)) {
      const fig = out.get(t.name)!;
      t.arm.resetPeak();
      const start = performance.now();
      const res = await request(t.url, { method: 'POST', headers: t.headers, body, dispatcher: bigClient });
      await res.body.dump({ limit: Number.MAX_SAFE_INTEGER });
      fig.latencies.push(performance.now() - start);
      fig.statuses.push(res.statusCode);
      fig.peaks.push(t.arm.peak());
    }
  }
  return out;
}

export function closePhaseClients(): Promise<void> {
  return bigClient.close();
}
