/**
 * Faults driven at running gateways under load; for each, the calls the clients had answered
 * against the calls the call log holds. Then the throughput of three instances behind HAProxy
 * against one instance's. Not a timed test: `TEST_DATABASE_URL=… TEST_REDIS_URL=… pnpm exec tsx bench/faults.ts`
 * (FAULTS=name,name runs a subset; the names are the first column). Database faults use a
 * PostgreSQL cluster of their own (initdb into a temp dir), never the shared one.
 */
import { startEmulator } from '@keygate/emulator';
import { randomBytes } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  seedCluster,
  startCluster,
  type Cluster,
  type Instance,
  type Seeded,
} from '../services/gateway/test/instances';
import { drive, tally, type Answer } from '../services/gateway/test/load';
import { freePort } from '../services/gateway/test/kit/free-port';
import { privatePostgres } from '../services/gateway/test/kit/private-postgres';
import { spawnArm } from './lib/arms';
import { ensureWrk, runWrk } from './lib/wrk';

const DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
// Assembled at run time (never a literal that looks like a real key): the emulator accepts any it is started with.
const PROVIDER_KEY = ['sk-ant', 'api03', randomBytes(24).toString('hex')].join('-');
const ONLY = process.env.FAULTS ? new Set(process.env.FAULTS.split(',')) : null;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Ctx {
  instance: Instance;
  cluster: Cluster;
  seeded: Seeded;
}

interface Fault {
  name: string;
  what: string;
  headers?: Record<string, string>;
  stream?: boolean;
  hangUp?: boolean;
  env?: Record<string, string>;
  limits?: { limitRpm?: number };
  /** Own services the fault stops and starts. */
  ownDatabase?: boolean;
  ownRedis?: boolean;
  /** Injects the fault 1 s into the load and lifts it; the load runs 1.5 s more. */
  during?: (
    ctx: Ctx & {
      stopDatabase(): Promise<void>;
      startDatabase(): Promise<void>;
      stopRedis(): Promise<void>;
      startRedis(): Promise<void>;
    },
  ) => Promise<void>;
}

const FAULTS: Fault[] = [
  { name: 'none', what: 'no fault (baseline)' },
  {
    name: 'db-restart',
    what: 'PostgreSQL stopped (immediate) for 3 s under load, then started',
    ownDatabase: true,
    during: async (c) => {
      await c.stopDatabase();
      await sleep(3_000);
      await c.startDatabase();
    },
  },
  {
    name: 'db-slow',
    what: 'PostgreSQL slow: the rollup table locked for 3 s (the writer waits on it)',
    during: ({ seeded }) =>
      seeded.store.db.sql.begin(async (tx) => {
        await tx`lock table usage_hourly in access exclusive mode`;
        await tx`select pg_sleep(3)`;
      }),
  },
  {
    name: 'upstream-500',
    what: 'upstream answers 500 api_error',
    headers: { 'x-emulator-scenario': 'api_error' },
  },
  {
    name: 'upstream-529',
    what: 'upstream answers 529 overloaded_error',
    headers: { 'x-emulator-scenario': 'overloaded' },
  },
  {
    name: 'upstream-timeout',
    what: 'upstream silent past the gateway timeout (500 ms) → 504',
    headers: { 'x-emulator-scenario': 'slow_first_byte', 'x-emulator-delay-ms': '1500' },
    env: { KEYGATE_UPSTREAM_TIMEOUT_MS: '500' },
  },
  {
    name: 'slow-first-byte',
    what: 'upstream first byte after 300 ms',
    headers: { 'x-emulator-scenario': 'slow_first_byte', 'x-emulator-delay-ms': '300' },
  },
  {
    name: 'stream-cut',
    what: 'upstream cuts the stream after 4 events',
    stream: true,
    headers: { 'x-emulator-scenario': 'stream_cut' },
  },
  {
    name: 'client-hangup',
    what: 'clients disconnect after the first bytes of a paced stream',
    stream: true,
    hangUp: true,
    headers: { 'x-emulator-scenario': 'paced', 'x-emulator-deltas': '20', 'x-emulator-interval-ms': '20' },
  },
  {
    name: 'redis-down',
    what: 'Redis (rate-limit counters) stopped for 3 s, key with a limit',
    ownRedis: true,
    limits: { limitRpm: 1_000_000 },
    during: async (c) => (await c.stopRedis(), await sleep(3_000), await c.startRedis()),
  },
  {
    name: 'gateway-kill',
    what: 'gateway killed with -9 under load, restarted 1 s later',
    during: async ({ instance }) => (
      await instance.stop('SIGKILL'), await sleep(1_000), await instance.start()
    ),
  },
];

async function startRedis(port: number): Promise<ChildProcess> {
  const p = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const up = () =>
    new Promise<boolean>((r) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), r(true)));
      s.once('error', () => r(false));
    });
  for (let i = 0; i < 50; i++) {
    if (await up()) return p;
    await sleep(100);
  }
  throw new Error('redis-server did not start');
}

async function runFault(f: Fault, upstreamUrl: string) {
  const pg = f.ownDatabase ? await privatePostgres() : null;
  const redisPort = f.ownRedis ? await freePort() : 0;
  let redis = f.ownRedis ? await startRedis(redisPort) : null;
  const cluster = await startCluster({
    count: 1,
    balancer: false,
    databaseUrl: pg?.url ?? DATABASE_URL,
    redisUrl: redis ? `redis://127.0.0.1:${redisPort}` : REDIS_URL,
    upstreamUrl,
    env: f.env ?? {},
  });
  const seeded = await seedCluster(cluster, PROVIDER_KEY);
  const instance = cluster.instances[0]!;
  try {
    const key = await seeded.newKey(f.limits ?? {});
    let done = false;
    const load = drive(cluster.url, key.secret, {
      concurrency: 8,
      stop: () => done,
      headers: f.headers ?? {},
      stream: f.stream ?? false,
      hangUp: f.hangUp ?? false,
    });
    await sleep(1_000);
    let diedDuringFault = false;
    const faultAt = Date.now();
    if (f.during) {
      await f.during({
        instance,
        cluster,
        seeded,
        stopDatabase: () => pg!.stop(),
        startDatabase: () => pg!.start(),
        stopRedis: async () => {
          const gone = new Promise((r) => redis!.once('exit', r));
          redis!.kill('SIGKILL');
          await gone;
        },
        startRedis: async () => void (redis = await startRedis(redisPort)),
      });
      diedDuringFault = f.name !== 'gateway-kill' && instance.proc?.exitCode !== null;
    }
    await sleep(1_500);
    done = true;
    const answers = await load;
    // Records may wait for a retry after the fault: up to 30 s.
    const answeredIds = answers.filter((a) => a.requestId).map((a) => a.requestId!);
    let counts = await seeded.recordCounts(key.id);
    for (let i = 0; i < 150 && !answeredIds.every((id) => counts.has(id)); i++) {
      await sleep(200);
      counts = await seeded.recordCounts(key.id);
    }
    const alive = instance.proc?.exitCode === null && instance.proc?.signalCode === null;
    return summarise(f, answers, counts, alive && !diedDuringFault, instance.stderr(), faultAt);
  } finally {
    await seeded.close().catch(() => {});
    await cluster.close().catch(() => {});
    redis?.kill('SIGKILL');
    await pg?.remove();
  }
}

function summarise(
  f: Fault,
  answers: Answer[],
  counts: Map<string, number>,
  alive: boolean,
  stderr: string,
  faultAt: number,
) {
  const answered = answers.filter((a) => a.requestId);
  const lostAnswers = answered.filter((a) => !counts.has(a.requestId!));
  const lost = lostAnswers.length;
  const twice = [...counts.values()].filter((n) => n > 1).length;
  const answeredIds = new Set(answered.map((a) => a.requestId));
  const unanswered = [...counts.keys()].filter((id) => !answeredIds.has(id)).length;
  const crash = /TypeError|uncaught|Cannot read properties/i.exec(stderr)?.[0] ?? null;
  return {
    fault: f.name,
    what: f.what,
    calls: answers.length,
    answers: tally(answered, (a) => `${a.status}${a.error ? ` ${a.error}` : ''}`),
    failedAtClient: answers.length - answered.length,
    recorded: answered.length - lost,
    lost,
    // How long before the fault began each lost call was answered (a kill -9 may lose those within the spool's sync interval).
    lostBeforeFaultMs: lostAnswers.map((a) => faultAt - a.at),
    twice,
    recordedNotAnswered: unanswered,
    processUp: alive ? 'yes' : `no${crash ? ` (${crash})` : ''}`,
  };
}

async function throughput() {
  ensureWrk();
  const emulator = await spawnArm('emulator', 'bench/servers/emulator.ts', {
    BENCH_PROVIDER_KEY: PROVIDER_KEY,
  });
  const work = mkdtempSync(join(tmpdir(), 'keygate-faults-'));
  const bodyFile = join(work, 'body.json');
  writeFileSync(
    bodyFile,
    JSON.stringify({
      model: 'claude-opus-4-5',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hello' }],
    }),
  );
  const rows: { setup: string; rps: number[]; errors: number }[] = [];
  try {
    for (const [setup, count, balancer] of [
      ['one instance, direct', 1, false],
      ['one instance behind HAProxy', 1, true],
      ['three instances behind HAProxy', 3, true],
    ] as const) {
      const cluster = await startCluster({
        count,
        balancer,
        databaseUrl: DATABASE_URL,
        redisUrl: REDIS_URL,
        upstreamUrl: emulator.url,
      });
      const seeded = await seedCluster(cluster, PROVIDER_KEY);
      try {
        const key = await seeded.newKey();
        const headers = { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' };
        await runWrk({ url: `${cluster.url}/v1/messages`, bodyFile, headers, connections: 32, seconds: 2 });
        const runs = [];
        for (let i = 0; i < 3; i++)
          runs.push(
            await runWrk({
              url: `${cluster.url}/v1/messages`,
              bodyFile,
              headers,
              connections: 64,
              seconds: 4,
            }),
          );
        // Answers other than 2xx (a balancer's 503) count as errors, not as throughput.
        rows.push({
          setup,
          rps: runs.map((r) => Math.round(r.rps * (1 - r.errors / Math.max(1, r.requests)))),
          errors: runs.reduce((s, r) => s + r.errors, 0),
        });
      } finally {
        await seeded.close();
        await cluster.close();
      }
    }
  } finally {
    await emulator.close();
    rmSync(work, { recursive: true, force: true });
  }
  return rows;
}

const emulator = await startEmulator({ port: 0, apiKey: PROVIDER_KEY });
const results = [];
try {
  for (const f of FAULTS) {
    if (ONLY && !ONLY.has(f.name)) continue;
    console.error(`fault: ${f.name}…`);
    results.push(await runFault(f, emulator.url));
  }
} finally {
  await emulator.close();
}
console.log(
  `# ${new Date().toISOString()}, ${cpus().length} cores (${cpus()[0]?.model}), Node ${process.version}; 8 clients per fault, fault at 1 s, load stopped 1.5 s after it is lifted\n`,
);
console.log(
  '| fault | what | calls | answers (status × count) | failed at client | answered and recorded | answered, not recorded | recorded twice | recorded, not answered | gateway stayed up |',
);
console.log('|---|---|---:|---|---:|---:|---:|---:|---:|---|');
const lostWhen = (r: ReturnType<typeof summarise>) =>
  r.lost ? ` (answered ${r.lostBeforeFaultMs.map((ms) => `${ms} ms`).join(', ')} before the fault)` : '';
for (const r of results) {
  const answers = Object.entries(r.answers)
    .map(([s, n]) => `${s} × ${n}`)
    .join(', ');
  console.log(
    `| ${r.fault} | ${r.what} | ${r.calls} | ${answers} | ${r.failedAtClient} | ${r.recorded} | **${r.lost}**${lostWhen(r)} | ${r.twice} | ${r.recordedNotAnswered} | ${r.processUp} |`,
  );
}
if (!ONLY || ONLY.has('throughput')) {
  console.error('throughput…');
  const rows = await throughput();
  console.log('\n| setup (wrk, 64 connections, 3 × 4 s) | answered (2xx) per second, each run | errors |');
  console.log('|---|---|---:|');
  for (const r of rows) console.log(`| ${r.setup} | ${r.rps.join(', ')} | ${r.errors} |`);
}
process.exit(0);
