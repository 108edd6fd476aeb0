/**
 * Start time, memory, CLI latency and embedded-database throughput, as a user meets them:
 * `pnpm start` from the repository root, on a fresh and then on an existing data dir.
 * `tsx bench/embedded.ts <label>` keeps its figures in bench/embedded-<label>.json and renders
 * every label's figures side by side into bench/RESULTS.md (its own section).
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './lib/arms';
import { alive, gatewayProcess, processTree } from './lib/proc-tree';
import { renderEmbedded, type EmbeddedFigures } from './lib/embedded-report';

const label = process.argv[2] ?? 'after';
const BIN = join(ROOT, 'services/gateway/bin/keygate.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const run = promisify(execFile);

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

const dataDir = mkdtempSync(join(tmpdir(), 'keygate-bench-embedded-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const env: NodeJS.ProcessEnv = { ...process.env, KEYGATE_DATA_DIR: dataDir, PORT: String(port), KEYGATE_LOG_LEVEL: 'warn' };
for (const name of ['DATABASE_URL', 'KEYGATE_SECRET', 'KEYGATE_OPERATOR_TOKEN', 'KEYGATE_URL', 'npm_config_user_agent']) delete env[name];
const up = () => fetch(`${base}/health`).then((r) => r.ok, () => false);

/** `pnpm start` as a user runs it; returns how long until /health answers, and the started pid. */
async function start(): Promise<{ pid: number; readyMs: number; cpuS: number }> {
  const t0 = performance.now();
  const child = spawn('pnpm', ['start'], { cwd: ROOT, env, stdio: 'ignore' });
  while (!(await up())) {
    if (child.exitCode !== null) throw new Error(`pnpm start exited ${child.exitCode}`);
    if (performance.now() - t0 > 60_000) throw new Error('not ready in 60 s');
    await sleep(20);
  }
  return { pid: child.pid!, readyMs: performance.now() - t0, cpuS: processTree(child.pid!).reduce((s, p) => s + p.cpuS, 0) };
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

async function cli(args: string[]): Promise<{ ms: number; json: any }> {
  const t0 = performance.now();
  const { stdout } = await run(process.execPath, [BIN, ...args, '--json'], { env, cwd: ROOT });
  return { ms: performance.now() - t0, json: JSON.parse(stdout) };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const figures: EmbeddedFigures = { label, date: new Date().toISOString(), node: process.version, cores: cpus().length } as EmbeddedFigures;
try {
  const fresh = await start();
  figures.readyFreshMs = fresh.readyMs;
  figures.readyFreshCpuS = fresh.cpuS;
  figures.loadAverage = loadavg()[0]!;
  await sleep(2_000);
  figures.idleFresh = memory(fresh.pid);

  const account = await cli(['account', 'create', '--name', 'Bench', '--plan', 'team']);
  const key = await cli(['key', 'create', '--account', account.json.id, '--test']);
  const lists: number[] = [];
  for (let i = 0; i < 5; i++) lists.push((await cli(['account', 'list'])).ms);
  figures.cliViaGatewayMs = { 'account create': account.ms, 'key create': key.ms, 'account list (median of 5)': median(lists) };

  // Calls through the gateway with a test key (the built-in emulator answers): the call log's end-to-end rate.
  const calls = 2_000;
  const t0 = performance.now();
  let next = 0;
  const body = JSON.stringify({ model: 'claude-opus-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] });
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next++ < calls) {
      const res = await fetch(`${base}/v1/messages`, { method: 'POST', headers: { authorization: `Bearer ${key.json.key}`, 'content-type': 'application/json' }, body });
      await res.arrayBuffer();
    }
  }));
  figures.callsPerSecondHttp = calls / ((performance.now() - t0) / 1000);
  figures.busy = memory(fresh.pid);
  figures.sigterm = await stop(fresh.pid);

  const again = await start();
  figures.readyExistingMs = again.readyMs;
  figures.readyExistingCpuS = again.cpuS;
  await sleep(2_000);
  figures.idleExisting = memory(again.pid);
  await stop(again.pid);

  const alone: number[] = [];
  for (let i = 0; i < 3; i++) alone.push((await cli(['account', 'list'])).ms);
  figures.cliAloneMs = median(alone);

  const { engineFigures } = await import('./lib/embedded-engine');
  Object.assign(figures, await engineFigures(dataDir, account.json.id));
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}

writeFileSync(join(ROOT, `bench/embedded-${label}.json`), JSON.stringify(figures, null, 2) + '\n');
const all = readdirSync(join(ROOT, 'bench'))
  .filter((f) => /^embedded-.*\.json$/.test(f))
  .map((f) => JSON.parse(readFileSync(join(ROOT, 'bench', f), 'utf8')) as EmbeddedFigures)
  .sort((a, b) => (a.label === 'before' ? -1 : b.label === 'before' ? 1 : a.label.localeCompare(b.label)));
const resultsFile = join(ROOT, 'bench/RESULTS.md');
const current = existsSync(resultsFile) ? readFileSync(resultsFile, 'utf8') : '';
writeFileSync(resultsFile, renderEmbedded(current, all));
console.log(JSON.stringify(figures, null, 2));
