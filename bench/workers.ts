import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulator } from '@keygate/emulator';
import { openDatabase } from '../services/gateway/src/store';
import { provision } from '../services/gateway/test/gateway-process';
import { freePort } from '../services/gateway/test/kit/free-port';
import { BODY_1K } from './lib/body';
import { postgresCpuMs, ROOT } from './lib/arms';
import { processTree } from './lib/proc-tree';
import { writeResultsSection } from './lib/results-section';
import { shuffled } from './lib/stats';
import { ensureWrk, runWrk } from './lib/wrk';

/**
 * `keygate serve` run several ways at once, in interleaved rounds (wrk, 1 KB body, 64
 * connections, call log on, external PostgreSQL): `tsx bench/workers.ts [rounds] [seconds]`.
 * By default `--workers 1` against `--workers 2`; BENCH_WORKER_ARMS lists others, each with its
 * own settings, e.g. `[{"workers":2},{"workers":2,"env":{"KEYGATE_CALL_LOG_THREAD":"off"}}]`.
 * Every gateway runs at once; each round measures each in turn. CPU per request counts the whole
 * process tree (the primary, its workers and their threads) and PostgreSQL's.
 */
interface WorkerArm {
  workers: number;
  env?: Record<string, string>;
}
const [rounds = '4', seconds = '5'] = process.argv.slice(2);
const ARMS = JSON.parse(process.env.BENCH_WORKER_ARMS ?? '[{"workers":1},{"workers":2}]') as WorkerArm[];
const label = (a: WorkerArm) =>
  [`--workers ${a.workers}`, ...Object.entries(a.env ?? {}).map(([k, v]) => `${k}=${v}`)].join(', ');
const DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const PROVIDER_KEY = 'sk-ant-bench-0123456789abcdefghijklmnop';
ensureWrk();
const work = mkdtempSync(join(tmpdir(), 'keygate-workers-bench-'));
const emulator = await startEmulator({ port: 0, apiKey: PROVIDER_KEY, ledgerLimit: 1_000 });
const schema = `kg_bench_w_${process.pid}`;
const base = {
  DATABASE_URL,
  KEYGATE_DB_SCHEMA: schema,
  KEYGATE_SECRET: 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyzABCDEF',
  KEYGATE_UPSTREAM_URL: emulator.url,
  KEYGATE_LOG_LEVEL: 'warn',
  PROVIDER_KEY,
};
const appKey = await provision(base);
const procs: ChildProcess[] = [];
async function serve(arm: WorkerArm, i: number): Promise<{ url: string; pid: number }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [join(ROOT, 'services/gateway/bin/keygate.js'), 'serve', '--workers', String(arm.workers)],
    {
      env: {
        ...process.env,
        ...base,
        ...arm.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        KEYGATE_DATA_DIR: join(work, `arm${i}`),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  procs.push(child);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if (
      await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { url, pid: child.pid! };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${label(arm)} did not start`);
}
try {
  const served: { url: string; pid: number }[] = [];
  for (const [i, arm] of ARMS.entries()) served.push(await serve(arm, i));
  await new Promise((r) => setTimeout(r, 3_000));
  const bodyFile = join(work, 'body.json');
  writeFileSync(bodyFile, BODY_1K);
  const headers = {
    authorization: `Bearer ${appKey}`,
    'content-type': 'application/json',
    'anthropic-version': '2023-06-01',
  };
  const treeCpuMs = (pid: number) => processTree(pid).reduce((s, p) => s + p.cpuS * 1000, 0);
  const runs = ARMS.map(() => ({ rps: [] as number[], requests: 0, cpuMs: 0, pgMs: 0 }));
  for (const { url } of served)
    await runWrk({ url: `${url}/v1/messages`, headers, bodyFile, connections: 64, seconds: 2 });
  for (let r = 0; r < Number(rounds); r++)
    for (const i of shuffled(ARMS.map((_, j) => j))) {
      const { url, pid } = served[i]!;
      const [cpu0, pg0] = [treeCpuMs(pid), postgresCpuMs()];
      const run = await runWrk({
        url: `${url}/v1/messages`,
        headers,
        bodyFile,
        connections: 64,
        seconds: Number(seconds),
      });
      const out = runs[i]!;
      out.rps.push(run.rps);
      out.requests += run.requests;
      out.cpuMs += treeCpuMs(pid) - cpu0;
      out.pgMs += postgresCpuMs() - pg0;
    }
  const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
  const first = mean(runs[0]!.rps);
  const lines = ARMS.map((arm, i) => {
    const o = runs[i]!;
    const per = (ms: number) => ((ms * 1000) / o.requests).toFixed(0);
    return `| ${label(arm)} | ${o.rps.map((v) => v.toFixed(0)).join(', ')} | ${mean(o.rps).toFixed(0)} (${(mean(o.rps) / first).toFixed(2)}×) | ${per(o.cpuMs)} | ${per(o.pgMs)} |`;
  });
  const section = [
    '<!-- workers -->',
    '## `keygate serve` configurations side by side (`bench/workers.ts`)',
    '',
    `${new Date().toISOString()}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(
        ' ',
      )} at the end; ${rounds} interleaved rounds of ${seconds} s, wrk at 64 connections, 1 KB body, call log on to the local PostgreSQL. CPU per request: the gateway's whole process tree.`,
    '',
    '| gateway | req/s by round | mean (share of the first) | CPU per request (µs) | PostgreSQL CPU per request (µs) |',
    '|---|---|---:|---:|---:|',
    ...lines,
    '<!-- /workers -->',
    '',
  ].join('\n');
  writeResultsSection('workers', section);
  console.log(section);
} finally {
  for (const p of procs) p.kill('SIGTERM');
  await Promise.all(
    procs.map((p) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once('exit', r)))),
  );
  await emulator.close();
  const db = await openDatabase({ url: DATABASE_URL, dataDir: work, max: 1 });
  await db.sql`drop schema if exists ${db.sql(schema)} cascade`;
  await db.close();
  rmSync(work, { recursive: true, force: true });
}
