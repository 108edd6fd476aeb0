import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ArmMessage } from './child';
import { compileArm } from './compile';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The PostgreSQL every bench script uses: the tests' (TEST_DATABASE_URL), else DATABASE_URL, else the local one. */
export const DATABASE_URL =
  process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** This checkout's commit, short, for a results table's column. */
export function revision(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

export interface Arm {
  name: string;
  pid: number;
  info: Record<string, unknown>;
  url: string;
  /** Resident set size now, in MB. */
  rss(): number;
  /** Starts a new peak-RSS window (Linux clear_refs). */
  resetPeak(): void;
  /** Peak RSS since the last reset (or start), in MB. */
  peak(): number;
  /** CPU time (user + system) used so far, ms. */
  cpuMs(): number;
  /** CPU time used so far by the process's main thread alone (the one that serves requests), ms. */
  mainThreadCpuMs(): number;
  /** Runs a full garbage collection in the arm (spawned with --expose-gc), so RSS shows what is retained; resolves with the JS heap in use, MB. */
  gc(): Promise<number>;
  close(): Promise<Record<string, unknown>>;
}

/** Forks `script` (TypeScript, built first: lib/compile.ts) as one arm in its own process and waits for it to listen. */
export async function spawnArm(
  name: string,
  script: string,
  env: Record<string, string>,
  execArgv: string[] = [],
): Promise<Arm> {
  const child = fork(await compileArm(script), [], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: not ready within 60 s`)), 60_000);
    child.once('exit', (code) => reject(new Error(`${name} exited (${code}) before it was ready`)));
    child.once('message', (m: ArmMessage) => {
      if (m.type !== 'ready') return;
      clearTimeout(timer);
      resolve(armOf(name, child, m.info));
    });
  });
}

/**
 * The emulator as an arm, and what a proxy arm is started with to call it: its address, the
 * provider key it accepts, the database, and the call log on.
 */
export async function upstreamArm(
  providerKey: string,
  databaseUrl: string,
): Promise<{ emulator: Arm; env: Record<string, string> }> {
  const emulator = await spawnArm('emulator', 'bench/servers/emulator.ts', {
    BENCH_PROVIDER_KEY: providerKey,
  });
  const env = {
    BENCH_UPSTREAM: emulator.url,
    BENCH_PROVIDER_KEY: providerKey,
    BENCH_DATABASE_URL: databaseUrl,
    BENCH_CALL_LOG: 'on',
  };
  return { emulator, env };
}

function armOf(name: string, child: ChildProcess, info: Record<string, unknown>): Arm {
  const pid = child.pid!;
  return {
    name,
    pid,
    info,
    url: String(info.url),
    rss: () => statusField(pid, 'VmRSS'),
    resetPeak: () => writeFileSync(`/proc/${pid}/clear_refs`, '5'),
    peak: () => statusField(pid, 'VmHWM'),
    cpuMs: () => cpuMsOf(pid),
    mainThreadCpuMs: () => cpuMsOf(pid, `/proc/${pid}/task/${pid}/stat`),
    gc: () =>
      new Promise((resolve) => {
        const onMessage = (m: ArmMessage) => {
          if (m.type !== 'collected') return;
          child.off('message', onMessage);
          resolve(m.heapMb);
        };
        child.on('message', onMessage);
        child.send({ type: 'gc' });
      }),
    close: () =>
      new Promise((resolve) => {
        let stats: Record<string, unknown> = {};
        const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
        child.on('message', (m: ArmMessage) => {
          if (m.type === 'closed') stats = m.stats;
        });
        child.once('exit', () => {
          clearTimeout(kill);
          resolve(stats);
        });
        if (child.connected) child.send({ type: 'close' });
        else child.kill('SIGTERM');
      }),
  };
}

/** A memory figure of a process from /proc/<pid>/status, MB. */
export function statusField(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);

/** A process's CPU time (or one thread's, from its /proc/<pid>/task/<tid>/stat), ms. */
export function cpuMsOf(pid: number, stat = `/proc/${pid}/stat`): number {
  try {
    const fields = readFileSync(stat, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

/** CPU time used so far by the local PostgreSQL server's processes (0 when it runs elsewhere), ms. */
export function postgresCpuMs(): number {
  let pids: number[];
  try {
    pids = execFileSync('pgrep', ['-u', 'postgres'], { encoding: 'utf8' }).trim().split('\n').map(Number);
  } catch {
    return 0;
  }
  return pids.reduce((sum, pid) => sum + cpuMsOf(pid), 0);
}

/** Samples the arms' RSS every `ms` while `work` runs; returns the work's result and each arm's highest sample. */
export async function withRssSampling<T>(
  arms: Arm[],
  work: () => Promise<T>,
  ms = 100,
): Promise<{ result: T; maxRss: Map<string, number> }> {
  const maxRss = new Map(arms.map((a) => [a.name, a.rss()]));
  const timer = setInterval(() => {
    for (const a of arms) maxRss.set(a.name, Math.max(maxRss.get(a.name)!, a.rss()));
  }, ms);
  try {
    return { result: await work(), maxRss };
  } finally {
    clearInterval(timer);
  }
}
