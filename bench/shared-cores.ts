/**
 * What the call log costs, parted between the gateway and PostgreSQL on the same cores, in one
 * run of interleaved rounds (wrk, 1 KB body, 32 connections):
 *   - call log off, twice (two processes of one build: how far two processes of one build differ);
 *   - call log on with a sink that sends nothing (the gateway's part: COPY lines, spool, batches),
 *     written in-process (the bench replaces the sink on the gateway's own thread);
 *   - the same process, with PostgreSQL doing the call log's inserts for another process at the
 *     rate the call log on reached (bench/servers/pg-load.ts): the database's part without the
 *     gateway's, measured on one process so that no difference between processes enters it;
 *   - call log on, in-process (KEYGATE_CALL_LOG_THREAD=off);
 *   - call log on, on its own thread (the default).
 * Writes its table into the "shared cores" section of bench/RESULTS.md.
 *   tsx bench/shared-cores.ts            (BENCH_ROUNDS, BENCH_SECONDS to change the run)
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BODY_1K } from './lib/body';
import { postgresCpuMs, spawnArm, type Arm } from './lib/arms';
import { median, shuffled } from './lib/stats';
import { ensureWrk, runWrk } from './lib/wrk';
import { writeResultsSection } from './lib/results-section';

const DB = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const KEY = 'sk-ant-bench-0123456789abcdefghijklmnop';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONNECTIONS = 32;

interface Variant {
  name: string;
  label: string;
  /** The gateway process it runs on; two variants of one process differ only by the load. */
  process: string;
  env: Record<string, string>;
  /** PostgreSQL inserts another process's call log while this arm runs. */
  load?: boolean;
}

const VARIANTS: Variant[] = [
  { name: 'off', label: 'call log off', process: 'off', env: { BENCH_CALL_LOG: 'off' } },
  {
    name: 'off-again',
    label: 'call log off, a second process',
    process: 'off-again',
    env: { BENCH_CALL_LOG: 'off' },
  },
  // The sink is replaced on the gateway's own thread, so these arms write the call log in-process
  // (servers/gateway.ts turns the thread off with BENCH_CALL_LOG_SINK=none).
  {
    name: 'null',
    label: 'call log in-process, sink sends nothing',
    process: 'null',
    env: { BENCH_CALL_LOG_SINK: 'none' },
  },
  {
    name: 'null-load',
    label: 'the same process, PostgreSQL inserting the call log of another process',
    process: 'null',
    env: { BENCH_CALL_LOG_SINK: 'none' },
    load: true,
  },
  {
    name: 'in-process',
    label: 'call log on, in-process (KEYGATE_CALL_LOG_THREAD=off)',
    process: 'in-process',
    env: { BENCH_SET_KEYGATE_CALL_LOG_THREAD: 'off' },
  },
  { name: 'on', label: 'call log on, on its thread (the default)', process: 'on', env: {} },
];

interface Round {
  rps: number;
  gatewayUs: number;
  postgresUs: number;
  /** The load process's own CPU (its records, COPY lines and driver), per request of the arm. */
  loadUs: number;
}

ensureWrk();
const arms: Arm[] = [];
try {
  const emulator = await spawnArm('emulator', 'bench/servers/emulator.ts', { BENCH_PROVIDER_KEY: KEY });
  arms.push(emulator);
  const common = {
    BENCH_UPSTREAM: emulator.url,
    BENCH_PROVIDER_KEY: KEY,
    BENCH_DATABASE_URL: DB,
    BENCH_CALL_LOG: 'on',
  };
  const gateways = new Map<string, Arm>();
  for (const v of VARIANTS) {
    if (gateways.has(v.process)) continue;
    const arm = await spawnArm(v.process, 'bench/servers/gateway.ts', { ...common, ...v.env });
    arms.push(arm);
    gateways.set(v.process, arm);
  }
  const bodyFile = join(mkdtempSync(join(tmpdir(), 'keygate-shared-cores-')), 'body.json');
  writeFileSync(bodyFile, BODY_1K);
  let loadRate = 0;
  const runOne = async (v: Variant): Promise<Round> => {
    const arm = gateways.get(v.process)!;
    const load = v.load
      ? await spawnArm('pg-load', 'bench/servers/pg-load.ts', {
          BENCH_DATABASE_URL: DB,
          BENCH_PG_LOAD_RATE: String(Math.round(loadRate)),
        })
      : null;
    try {
      const [cpu0, pg0, load0] = [arm.cpuMs(), postgresCpuMs(), load?.cpuMs() ?? 0];
      const run = await runWrk({
        url: `${arm.url}/v1/messages`,
        headers: {
          'content-type': 'application/json',
          'anthropic-version': '2023-06-01',
          authorization: `Bearer ${arm.info.appKey}`,
        },
        bodyFile,
        connections: CONNECTIONS,
        seconds: SECONDS,
      });
      if (run.errors > 0) throw new Error(`${v.name}: ${run.errors} errors`);
      return {
        rps: run.rps,
        gatewayUs: ((arm.cpuMs() - cpu0) * 1000) / run.requests,
        postgresUs: ((postgresCpuMs() - pg0) * 1000) / run.requests,
        loadUs: load ? ((load.cpuMs() - load0) * 1000) / run.requests : 0,
      };
    } finally {
      await load?.close();
    }
  };
  // Warm-up, which also sets the load's rate: what the call log on reached.
  for (const v of VARIANTS.filter((x) => !x.load)) {
    const r = await runOne(v);
    if (v.name === 'on') loadRate = r.rps;
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const rounds = new Map<string, Round[]>(VARIANTS.map((v) => [v.name, []]));
  const started = new Date();
  const loadRates: number[] = [];
  for (let i = 0; i < ROUNDS; i++)
    for (const v of shuffled(VARIANTS)) {
      if (v.load) loadRates.push(loadRate);
      const r = await runOne(v);
      rounds.get(v.name)!.push(r);
      // The load follows the call log on: the mean of its rounds so far.
      if (v.name === 'on') loadRate = mean(rounds.get('on')!.map((x) => x.rps));
    }
  const off = rounds.get('off')!;
  const rows = VARIANTS.map((v) => {
    const rs = rounds.get(v.name)!;
    // Each round's arm against the call log off in the same round: the machine's drift cancels.
    const paired = median(rs.map((r, i) => r.rps / off[i]!.rps));
    const line = `| ${v.label} | ${mean(rs.map((r) => r.rps)).toFixed(0)} | ${paired.toFixed(2)}× | ${mean(rs.map((r) => r.gatewayUs)).toFixed(0)} | ${mean(rs.map((r) => r.postgresUs)).toFixed(1)} | ${v.load ? mean(rs.map((r) => r.loadUs)).toFixed(1) : '—'} |`;
    console.log(line);
    return line;
  });
  const section = [
    '<!-- shared-cores -->',
    '## The call log on shared cores (`bench/shared-cores.ts`)',
    '',
    `${started.toISOString()}, ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')} load average at the end; ${ROUNDS} interleaved rounds of ${SECONDS} s, wrk at ${CONNECTIONS} connections, 1 KB body; the database load inserts ${Math.round(mean(loadRates))} calls/s on average (in each round, the mean rate the call log on has reached so far). "Share of off" is the median over rounds of each round's ratio to the call log off in that round.`,
    '',
    '| arm | req/s | share of off | gateway CPU per request (µs) | PostgreSQL CPU per request (µs) | load process CPU per request (µs) |',
    '|---|---:|---:|---:|---:|---:|',
    ...rows,
    '<!-- /shared-cores -->',
    '',
  ].join('\n');
  writeResultsSection('shared-cores', section);
  console.log(section);
} finally {
  for (const a of arms.reverse()) await a.close().catch(() => {});
}
