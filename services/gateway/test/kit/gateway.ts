import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { waitFor } from './wait';

const GATEWAY = join(import.meta.dirname, '../..');
const ROOT = join(GATEWAY, '../..');
/** `keygate` as a user runs it: the bin, which runs the compiled build (rebuilt when stale). */
export const KEYGATE_BIN = join(GATEWAY, 'bin/keygate.js');

/**
 * The command that runs `keygate <args>`: the one place that decides what a test runs, the
 * bin (`node bin/keygate.js`) or `pnpm start` from the repository's root, as a person types it.
 */
export function keygateCommand(
  args: string[],
  via: 'bin' | 'pnpm' = 'bin',
): { file: string; args: string[]; cwd?: string } {
  if (via === 'pnpm') {
    if (args.join(' ') !== 'serve') throw new Error('pnpm start runs `keygate serve` only');
    return { file: 'pnpm', args: ['start'], cwd: ROOT };
  }
  return { file: process.execPath, args: [KEYGATE_BIN, ...args] };
}

/** Settings of the test runner's own environment that would point a child at another place or secret. */
const PLACES = [
  'DATABASE_URL',
  'KEYGATE_DB_SCHEMA',
  'KEYGATE_SECRET',
  'KEYGATE_OPERATOR_TOKEN',
  'KEYGATE_URL',
  'REDIS_URL',
  'KEYGATE_DATA_DIR',
];

/** A child's environment: the runner's (PATH, HOME, …) without PLACES, then `settings`. */
export function childEnv(settings: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of PLACES) delete env[name];
  return { ...env, ...settings };
}

export interface SpawnedGateway {
  proc: ChildProcess;
  url: string;
  env: NodeJS.ProcessEnv;
  /** Everything the process wrote on stderr so far. */
  stderr(): string;
  /** Everything it wrote on stdout so far (the start message). */
  stdout(): string;
  /** The exit code, or the signal's name when a signal ended it. */
  exited: Promise<number | string>;
  /** Sends the signal (once it still runs) and resolves with `exited`. */
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

export interface SpawnOptions {
  /** The whole environment of the child; PORT and HOST are set from `port`. */
  env: NodeJS.ProcessEnv;
  port: number;
  via?: 'bin' | 'pnpm';
  /** The path that answers 200 once it serves: `/health` (up), `/readyz` (database reachable). */
  ready?: '/health' | '/readyz';
  readyTimeoutMs?: number;
  /** Resolve (instead of throwing) when the process exits before it is ready: tests of refusals to start. */
  mayExit?: boolean;
}

/** `keygate serve` as a child process; resolves once `ready` answers 200. */
export async function spawnGateway(opts: SpawnOptions): Promise<SpawnedGateway> {
  const command = keygateCommand(['serve'], opts.via);
  // One process unless the test asks for workers (`keygate serve` runs one per core by default).
  const env = {
    KEYGATE_WORKERS: '1',
    ...opts.env,
    PORT: String(opts.port),
    HOST: '127.0.0.1',
  };
  const proc = spawn(command.file, command.args, {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(command.cwd ? { cwd: command.cwd } : {}),
  });
  let stderr = '';
  let stdout = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  proc.stdout!.on('data', (d) => (stdout += d));
  const exited = new Promise<number | string>((r) =>
    proc.once('exit', (code, signal) => r(code ?? signal ?? -1)),
  );
  const gone = () => proc.exitCode !== null || proc.signalCode !== null;
  const url = `http://127.0.0.1:${opts.port}`;
  const path = opts.ready ?? '/health';
  await waitFor(
    async () => {
      if (gone()) return 'exited';
      const res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(1_000) });
      await res.arrayBuffer();
      return res.ok && 'ready';
    },
    { timeout: opts.readyTimeoutMs ?? 90_000, interval: 50, what: `${url}${path} to answer 200` },
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${stderr}`);
  });
  if (gone() && !opts.mayExit) throw new Error(`gateway exited before it was ready:\n${stderr}`);
  return {
    proc,
    url,
    env,
    stderr: () => stderr,
    stdout: () => stdout,
    exited,
    stop(signal = 'SIGTERM') {
      if (!gone()) proc.kill(signal);
      return exited;
    },
  };
}
