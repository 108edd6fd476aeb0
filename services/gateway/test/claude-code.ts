import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
// @ts-expect-error plain ESM script without types
import { ensureTools } from '../../../scripts/ensure-tools.mjs';

/** The Claude Code binary the integration tests' global setup installed into .cache/tools. */
export const CLAUDE_BIN: string = (ensureTools(['claude']) as { claude: string }).claude;

// Claude Code sends a device id (its `userID`, created on first start) in `metadata.user_id`.
// Seeding it makes two runs from fresh homes send the same bytes.
const DEVICE_ID = 'a'.repeat(64);

/**
 * Empties `home` and seeds it with Claude Code's device id. Both runs of a comparison use the same
 * path (it appears in the system prompt as the working directory), each from a fresh state.
 */
export function freshHome(home: string): void {
  rmSync(home, { recursive: true, force: true });
  mkdirSync(home, { recursive: true });
  writeFileSync(`${home}/.claude.json`, JSON.stringify({ userID: DEVICE_ID }));
}

/** A loopback port nothing listens on: a proxy there refuses every connection at once. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const running = new Set<ChildProcess>();

/** Kills the runs still going (a test that timed out); for `afterEach`. */
export function killClaudeRuns(): void {
  for (const child of running) child.kill('SIGKILL');
}

export interface ClaudeRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface ClaudeOptions {
  home: string;
  prompt: string;
  /** Pinned with `--session-id`, so both runs of a comparison send the same session id. */
  sessionId: string;
  /** ANTHROPIC_BASE_URL, the credential variable and any other settings. */
  env: Record<string, string>;
  /** Where outbound traffic other than to loopback goes (see `closedPort`). */
  blackholePort: number;
  timeoutMs?: number;
  /** More command-line arguments (a permission mode, an added directory). */
  args?: string[];
}

/**
 * `claude -p` as a child process, with only the environment given (HOME is the temp home).
 * Claude Code runs with its default tool set (a dozen tools, as users run it); the emulator
 * calls a tool only when the prompt names it, so "hi" gets a text answer and one turn.
 * `--no-session-persistence` lets a session id be used twice.
 * Traffic that is not for ANTHROPIC_BASE_URL (telemetry, update checks, unless
 * CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1) goes to a proxy on a closed loopback port, so
 * nothing leaves the machine. Killed after `timeoutMs`.
 */
export function runClaude(opts: ClaudeOptions): Promise<ClaudeRun> {
  const proxy = `http://127.0.0.1:${opts.blackholePort}`;
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: opts.home,
    HTTPS_PROXY: proxy,
    HTTP_PROXY: proxy,
    NO_PROXY: '127.0.0.1,localhost',
    ...opts.env,
  };
  const args = [
    '-p',
    opts.prompt,
    '--session-id',
    opts.sessionId,
    '--no-session-persistence',
    ...(opts.args ?? []),
  ];
  const child = spawn(CLAUDE_BIN, args, { cwd: opts.home, env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timeoutMs = opts.timeoutMs ?? 45_000;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`claude -p did not exit within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`),
      );
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      running.delete(child);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}
