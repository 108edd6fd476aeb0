/**
 * Start time, memory, CLI latency and embedded-database throughput, as a user meets them:
 * `pnpm start` from the repository root, on a fresh and then on an existing data dir.
 * `tsx bench/embedded.ts <label>` keeps its figures in bench/embedded-<label>.json and renders
 * every label's figures side by side into bench/RESULTS.md (its own section).
 * The machine is shared: every start records the load average, and CPU seconds beside wall time.
 */
import { execFile, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { freePort } from '../services/gateway/test/kit/free-port';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './lib/arms';
import { alive, processTree, type Proc } from './lib/proc-tree';
import {
  renderEmbedded,
  type CliFigure,
  type EmbeddedFigures,
  type StartFigure,
} from './lib/embedded-report';

const label = process.argv[2] ?? 'after';
const BIN = join(ROOT, 'services/gateway/bin/keygate.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const run = promisify(execFile);

// A fresh build first, so that no start below includes one (bin/keygate.js builds when stale).
await run(process.execPath, [join(ROOT, 'services/gateway/scripts/build.mjs')]);

const dataDir = mkdtempSync(join(tmpdir(), 'keygate-bench-embedded-'));
// As root the embedded PostgreSQL runs as the postgres user, which must enter this folder (mkdtemp makes it 0700).
chmodSync(dataDir, 0o711);
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const env: NodeJS.ProcessEnv = {
  ...process.env,
  KEYGATE_DATA_DIR: dataDir,
  PORT: String(port),
  KEYGATE_LOG_LEVEL: 'warn',
};
for (const name of [
  'DATABASE_URL',
  'KEYGATE_SECRET',
  'KEYGATE_OPERATOR_TOKEN',
  'KEYGATE_URL',
  'npm_config_user_agent',
])
  delete env[name];
const up = () =>
  fetch(`${base}/health`).then(
    (r) => r.ok,
    () => false,
  );

const cpuOf = (procs: Proc[]) => procs.reduce((sum, p) => sum + p.cpuS, 0);

/** The gateway's own node process (pnpm, when it started it, is its parent). */
function gatewayProcess(root: number): Proc | null {
  const cmdline = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      return '';
    }
  };
  return processTree(root).find((p) => cmdline(p.pid).includes('keygate.js')) ?? null;
}

/**
 * Starts the gateway as a user does (`pnpm start`, or `node services/gateway/bin/keygate.js serve`)
 * and returns how long until /health answers, with the CPU seconds each part of the tree spent
 * until then: pnpm itself, the gateway's node (with initdb, which it waits for) and PostgreSQL.
 */
async function start(how: 'pnpm' | 'node' = 'pnpm'): Promise<{ pid: number } & StartFigure> {
  const loadAverage = loadavg()[0]!;
  const t0 = performance.now();
  const child =
    how === 'pnpm'
      ? spawn('pnpm', ['start'], { cwd: ROOT, env, stdio: 'ignore' })
      : spawn(process.execPath, [BIN, 'serve'], { cwd: ROOT, env, stdio: 'ignore' });
  while (!(await up())) {
    if (child.exitCode !== null) throw new Error(`${how} start exited ${child.exitCode}`);
    if (performance.now() - t0 > 60_000) throw new Error('not ready in 60 s');
    await sleep(20);
  }
  const readyMs = performance.now() - t0;
  const tree = processTree(child.pid!);
  const gateway = gatewayProcess(child.pid!);
  const postgres = tree.filter((p) => p.name.startsWith('postgres'));
  return {
    pid: child.pid!,
    readyMs,
    loadAverage,
    cpuS: cpuOf(tree),
    gatewayCpuS: gateway?.cpuS ?? 0,
    postgresCpuS: cpuOf(postgres),
    wrapperCpuS: cpuOf(tree) - (gateway?.cpuS ?? 0) - cpuOf(postgres),
  };
}

/** SIGTERM to the started pid, as a process manager sends it; then whatever survived is stopped. */
async function stop(pid: number): Promise<{ exited: boolean; stillServing: boolean }> {
  const tree = processTree(pid).map((p) => p.pid);
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 200 && alive(pid); i++) await sleep(50);
  await sleep(500);
  const exited = !alive(pid);
  const stillServing = await up();
  for (const p of tree.reverse()) if (alive(p)) process.kill(p, 'SIGTERM');
  for (let i = 0; i < 200 && tree.some(alive); i++) await sleep(50);
  return { exited, stillServing };
}

function memory(pid: number) {
  const tree = processTree(pid);
  const gw = gatewayProcess(pid);
  const pg = tree.filter((p) => p.name.startsWith('postgres'));
  return {
    gatewayRssMb: gw?.rssMb ?? 0,
    postgresRssMb: pg.reduce((s, p) => s + p.rssMb, 0),
    treeRssMb: tree.reduce((s, p) => s + p.rssMb, 0),
    processes: tree.length,
  };
}

/** CPU seconds of this process's waited-for children (the CLI runs; pnpm start is never waited for before it is stopped). */
function childrenCpuS(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

async function cli(args: string[]): Promise<{ ms: number; cpuS: number; json: any }> {
  const c0 = childrenCpuS();
  const t0 = performance.now();
  const { stdout } = await run(process.execPath, [BIN, ...args, '--json'], { env, cwd: ROOT });
  return { ms: performance.now() - t0, cpuS: childrenCpuS() - c0, json: JSON.parse(stdout) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Each command `runs` times (the median run, wall and CPU), as `hyperfine` would. */
async function cliFigures(
  commands: Record<string, string[]>,
  runs: number,
): Promise<Record<string, CliFigure>> {
  const out: Record<string, CliFigure> = {};
  for (const [name, args] of Object.entries(commands)) {
    const loadAverage = loadavg()[0]!;
    const samples: Array<{ ms: number; cpuS: number }> = [];
    for (let i = 0; i < runs; i++) samples.push(await cli(args));
    out[name] = {
      ms: median(samples.map((x) => x.ms)),
      cpuS: median(samples.map((x) => x.cpuS)),
      runs,
      loadAverage,
    };
  }
  return out;
}

const figures: EmbeddedFigures = {
  label,
  date: new Date().toISOString(),
  node: process.version,
  cores: cpus().length,
} as EmbeddedFigures;
try {
  const fresh = await start();
  figures.loadAverage = fresh.loadAverage;
  figures.readyFreshMs = fresh.readyMs;
  figures.readyFreshCpuS = fresh.cpuS;
  figures.startFresh = fresh;
  await sleep(2_000);
  figures.idleFresh = memory(fresh.pid);

  const account = await cli(['account', 'create', '--name', 'Bench', '--plan', 'team']);
  const key = await cli(['key', 'create', '--account', account.json.id, '--test']);
  figures.cliViaGatewayMs = { 'account create': account.ms };
  const commands = {
    plans: ['plans'],
    'account list': ['account', 'list'],
    'key create': ['key', 'create', '--account', account.json.id, '--test'],
    usage: ['usage', '--account', account.json.id, '--since', '7d'],
  };
  figures.cliViaGateway = await cliFigures(commands, 7);

  // Calls through the gateway with a test key (the built-in emulator answers): the call log's end-to-end rate.
  const calls = 2_000;
  const t0 = performance.now();
  let next = 0;
  const body = JSON.stringify({
    model: 'claude-opus-4-5',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'hello' }],
  });
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next++ < calls) {
        const res = await fetch(`${base}/v1/messages`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.json.key}`, 'content-type': 'application/json' },
          body,
        });
        await res.arrayBuffer();
      }
    }),
  );
  figures.callsPerSecondHttp = calls / ((performance.now() - t0) / 1000);
  figures.busy = memory(fresh.pid);
  figures.sigterm = await stop(fresh.pid);

  const again = await start();
  figures.readyExistingMs = again.readyMs;
  figures.readyExistingCpuS = again.cpuS;
  figures.startExisting = again;
  await sleep(2_000);
  figures.idleExisting = memory(again.pid);
  await stop(again.pid);

  // The same start without pnpm in front: what pnpm's own start adds.
  const direct = await start('node');
  figures.startExistingNode = direct;
  await stop(direct.pid);

  figures.cliAlone = await cliFigures(commands, 3);
  figures.cliAloneMs = figures.cliAlone['account list']!.ms;

  const { engineFigures } = await import('./lib/embedded-engine');
  Object.assign(figures, await engineFigures(dataDir, account.json.id));
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}

// Columns in the order the tree went through: PGlite, the first compiled build, then this one.
function order(l: string): number {
  const i = ['before', 'compiled', 'after'].indexOf(l);
  return i < 0 ? 3 : i;
}

writeFileSync(join(ROOT, `bench/embedded-${label}.json`), `${JSON.stringify(figures, null, 2)}\n`);
const all = readdirSync(join(ROOT, 'bench'))
  .filter((f) => /^embedded-.*\.json$/.test(f))
  .map((f) => JSON.parse(readFileSync(join(ROOT, 'bench', f), 'utf8')) as EmbeddedFigures)
  .sort((a, b) => order(a.label) - order(b.label) || a.label.localeCompare(b.label));
const resultsFile = join(ROOT, 'bench/RESULTS.md');
const current = existsSync(resultsFile) ? readFileSync(resultsFile, 'utf8') : '';
writeFileSync(resultsFile, renderEmbedded(current, all));
console.log(JSON.stringify(figures, null, 2));
