/**
 * What metrics and access lines cost on the call path: the same build in five processes,
 * metrics off, metrics on (KEYGATE_METRICS_TOKEN) and metrics on with an access line per call
 * (KEYGATE_LOG_LEVEL=info) written to stderr synchronously, asynchronously one write per line,
 * and as the gateway does by default (asynchronously in 4 KB batches), at concurrency 1 in
 * interleaved rounds. stderr should be a pipe, as under a log collector:
 *   TEST_DATABASE_URL=postgres://… pnpm exec tsx bench/metrics.ts 2> >(wc -c)
 * Prints a Markdown table.
 */
import { createLogger, stderrSink, type LineSink } from '../services/gateway/src/lib/logger';
import { AccessLog } from '../services/gateway/src/metrics/access-log';
import { GatewayMetrics } from '../services/gateway/src/metrics/metrics';
import { Prices } from '../services/gateway/src/pricing/prices';
import type { CallRecord } from '../services/gateway/src/lib/call-record';
import { callAt } from '../services/gateway/test/kit/call-records';
import { DATABASE_URL, spawnArm, type Arm } from './lib/arms';
import { serialRounds } from './lib/phases';
import { percentile } from './lib/stats';

const PROVIDER_KEY = 'sk-ant-bench-0123456789abcdefghijklmnop';
const TOKEN = 'bench-metrics-token-0123456789';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);

/** CPU µs per call of `fn`, in this process (less sensitive to a busy machine than latency). */
function cpuPerCall(n: number, fn: (i: number) => void): number {
  for (let i = 0; i < 10_000; i++) fn(i);
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) fn(i);
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / n;
}

const record = (i: number): CallRecord =>
  callAt(`acct_${i % 20}`, new Date().toISOString(), {
    id: `req_${i}`,
    keyId: `key_${i % 50}`,
    model: i % 3 ? 'claude-opus-4-5' : 'claude-sonnet-4-5',
    stream: i % 2 === 0,
    status: i % 17 ? 200 : 529,
    errorType: i % 17 ? null : 'overloaded_error',
    usage: {
      input_tokens: 12,
      output_tokens: 40,
      cache_read_input_tokens: 100,
      cache_creation_input_tokens: 0,
    },
    upstreamMessageId: 'msg_1',
    upstreamRequestId: 'req_up',
    retryCount: i % 10 === 0 ? 1 : 0,
    latencyMs: 12.5,
    ttfbMs: 3.2,
  });
const records = Array.from({ length: 1000 }, (_, i) => record(i));
const metrics = new GatewayMetrics(new Prices());
const observe = cpuPerCall(200_000, (i) => metrics.observeCall(records[i % 1000]!));
const access = new AccessLog();
const lineLog = createLogger('info', () => {});
const quietLog = createLogger('warn', () => {});
const accessLine = (log: typeof lineLog) => (i: number) => {
  const r = records[i % 1000]!;
  const child = log.child({ requestId: r.id });
  access.hold(r);
  access.write(child, r.id, { method: 'POST', path: '/v1/messages', status: 200, startedAt: 0 }, 1);
};
const lineOn = cpuPerCall(100_000, accessLine(lineLog));
const lineOff = cpuPerCall(100_000, accessLine(quietLog));
console.log(
  `In process: observeCall ${observe.toFixed(2)} µs CPU per call; child logger + access line ${lineOn.toFixed(2)} µs at info (line built and serialized, not written), ${lineOff.toFixed(2)} µs at warn.`,
);

/**
 * CPU µs per access line written to this process's stderr (all threads: libuv's pool does the
 * asynchronous writes), one line per turn of the event loop as when serving, less the same
 * loop with lines built but not written.
 */
async function writtenLine(sink: LineSink | null, n = 20_000): Promise<number> {
  const write = accessLine(createLogger('info', sink ?? (() => {})));
  const turn = () => new Promise<void>((r) => setImmediate(r));
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    write(i);
    await turn();
  }
  sink?.flush();
  await new Promise((r) => setTimeout(r, 300));
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / n;
}
const unwritten = await writtenLine(null);
const written = {
  sync: (await writtenLine(stderrSink({ sync: true }))) - unwritten,
  perLine: (await writtenLine(stderrSink({ minLength: 0, flushMs: 0 }))) - unwritten,
  batched: (await writtenLine(stderrSink())) - unwritten,
};
console.log(
  `Writing one access line to stderr, CPU µs per line beyond building it: synchronous ${written.sync.toFixed(2)}, asynchronous one write per line ${written.perLine.toFixed(2)}, asynchronous in 4 KB batches (the default) ${written.batched.toFixed(2)}.\n`,
);

const body = Buffer.from(
  JSON.stringify({
    model: 'claude-opus-4-5',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'x'.repeat(1000) }],
  }),
);
const arms: Arm[] = [];
try {
  const emulator = await spawnArm('emulator', 'bench/servers/emulator.ts', {
    BENCH_PROVIDER_KEY: PROVIDER_KEY,
  });
  arms.push(emulator);
  const upstream = {
    BENCH_UPSTREAM: emulator.url,
    BENCH_PROVIDER_KEY: PROVIDER_KEY,
    BENCH_DATABASE_URL: DATABASE_URL,
  };
  const variants = {
    'metrics off': {},
    'metrics on': { BENCH_METRICS_TOKEN: TOKEN },
    'metrics on, access lines, sync stderr': {
      BENCH_METRICS_TOKEN: TOKEN,
      BENCH_LOG_LEVEL: 'info',
      BENCH_LOG_SINK: 'sync',
    },
    'metrics on, access lines, async stderr, one write per line': {
      BENCH_METRICS_TOKEN: TOKEN,
      BENCH_LOG_LEVEL: 'info',
      BENCH_LOG_SINK: 'unbatched',
    },
    'metrics on, access lines (default: async stderr, 4 KB batches)': {
      BENCH_METRICS_TOKEN: TOKEN,
      BENCH_LOG_LEVEL: 'info',
    },
  };
  const targets = [];
  for (const [name, env] of Object.entries(variants)) {
    const arm = await spawnArm(name, 'bench/servers/gateway.ts', { ...upstream, ...env });
    arms.push(arm);
    const headers = { authorization: `Bearer ${arm.info.appKey}`, 'content-type': 'application/json' };
    targets.push({ name, arm, url: `${arm.url}/v1/messages`, headers });
  }
  // Warm-up, then the measured rounds.
  await serialRounds(targets, { body, seconds: 1, rounds: 1 });
  const cpu0 = new Map(targets.map((t) => [t.name, t.arm.cpuMs()]));
  const figures = await serialRounds(targets, { body, seconds: SECONDS, rounds: ROUNDS });
  const base = figures.get('metrics off')!;
  const baseRps = base.samples.length / (ROUNDS * SECONDS);
  const baseP50 = percentile(base.samples, 50);
  console.log(
    '| arm | RPS at c=1 | vs off | p50 (ms) | vs off (ms) | p99 (ms) | CPU per call (µs) | errors |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const t of targets) {
    const f = figures.get(t.name)!;
    const rps = f.samples.length / (ROUNDS * SECONDS);
    const p50 = percentile(f.samples, 50);
    const cpuUs = ((t.arm.cpuMs() - cpu0.get(t.name)!) * 1000) / f.samples.length;
    console.log(
      `| ${t.name} | ${rps.toFixed(0)} | ${(((rps - baseRps) / baseRps) * 100).toFixed(1)}% | ${p50.toFixed(3)} | ${(p50 - baseP50 >= 0 ? '+' : '') + (p50 - baseP50).toFixed(3)} | ${percentile(f.samples, 99).toFixed(3)} | ${cpuUs.toFixed(0)} | ${f.errors} |`,
    );
  }
  const on = targets[1]!;
  const scrape = await fetch(`${on.arm.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } }).then(
    (r) => r.text(),
  );
  const counted = [...scrape.matchAll(/^keygate_calls_total\{[^}]*\} (\d+)$/gm)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
  console.log(
    `\n${ROUNDS} interleaved rounds of ${SECONDS} s per arm after a 1 s warm-up; 1 KB body. keygate_calls_total of "metrics on": ${counted} (calls it served: ${figures.get('metrics on')!.samples.length} measured + warm-up).`,
  );
} finally {
  for (const a of arms.reverse()) await a.close();
}
