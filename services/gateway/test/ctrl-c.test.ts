import { startEmulator, type Emulator } from '@keygate/emulator';
import { execFile, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store';
import { newDataDir } from './data-dir';
import { PROVIDER_KEY } from './harness';
import { freePort } from './kit/free-port';

// Ctrl-C as a terminal sends it: SIGINT to the whole foreground process group (pnpm and the
// gateway), and again. `pnpm start` runs in a group of its own, which the test signals.
const ROOT = join(import.meta.dirname, '../../..');
const BIN = join(import.meta.dirname, '../bin/keygate.js');
let emulator: Emulator;
let dataDir: string;

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, apiKey: PROVIDER_KEY });
  dataDir = newDataDir('keygate-ctrl-c-');
});
afterAll(async () => {
  await emulator?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const {
  DATABASE_URL: _d,
  KEYGATE_URL: _u,
  KEYGATE_DB_SCHEMA: _s,
  KEYGATE_SECRET: _k,
  ...inherited
} = process.env;

function cli(args: string[], env: Record<string, string>): Promise<any> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, [BIN, ...args, '--json'], { env: { ...inherited, ...env } }, (err, out, e) =>
      err ? reject(new Error(`${args.join(' ')}: ${e}`)) : resolve(JSON.parse(out)),
    ),
  );
}

/** Processes whose command line names `dir` (the embedded PostgreSQL runs with `-D <dir>/postgres`). */
function processesOn(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(`${dir}/postgres`))
        pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

describe('Ctrl-C on `pnpm start`, twice', () => {
  it('drains: the open stream ends with the error event, the call is in the call log, PostgreSQL is stopped', async () => {
    const port = await freePort();
    const env = {
      KEYGATE_DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      KEYGATE_UPSTREAM_URL: emulator.url,
      // Long, so the second Ctrl-C is what ends the stream.
      KEYGATE_SHUTDOWN_GRACE_MS: '60000',
      KEYGATE_LOG_LEVEL: 'info',
    };
    const start = spawn('pnpm', ['start'], {
      cwd: ROOT,
      env: { ...inherited, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    let stderr = '';
    start.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((r) => start.once('exit', (code) => r(code)));
    await expect.poll(() => stderr, { timeout: 60_000, interval: 50 }).toContain('"keygate listening"');
    expect(processesOn(dataDir).length).toBeGreaterThan(0);

    const account = await cli(
      ['account', 'create', '--name', 'Ctrl-C', '--plan', 'solo', '--provider-key-env', 'PK'],
      { ...env, PK: PROVIDER_KEY },
    );
    const key = (await cli(['key', 'create', '--account', account.id], env)).key as string;
    const res = await fetch(`http://127.0.0.1:${port}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'x-emulator-scenario': 'paced',
        'x-emulator-deltas': '2000',
        'x-emulator-interval-ms': '25',
      },
      body: JSON.stringify({
        model: 'claude-opus-4-5',
        max_tokens: 4000,
        stream: true,
        messages: [{ role: 'user', content: 'A long story, please.' }],
      }),
    });
    const requestId = res.headers.get('keygate-request-id')!;
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let body = '';
    const read = async (until: (b: string) => boolean) => {
      while (!until(body)) {
        const chunk = await reader.read();
        if (chunk.done) return;
        body += decoder.decode(chunk.value, { stream: true });
      }
    };
    await read((b) => b.includes('event: content_block_delta'));

    process.kill(-start.pid!, 'SIGINT');
    await expect.poll(() => stderr, { timeout: 10_000, interval: 20 }).toContain('shutting down');
    // One Ctrl-C reaches the gateway twice (the terminal's and pnpm's forward): a drain with the
    // full grace, as one SIGTERM; the stream flows on (40 more deltas, a second at 25 ms each).
    const deltas = (b: string) => b.split('event: content_block_delta').length;
    const before = deltas(body);
    await read((b) => deltas(b) >= before + 40 || b.includes('event: error'));
    expect(body).not.toContain('event: error');
    process.kill(-start.pid!, 'SIGINT');
    await read(() => false);

    const last = body.trimEnd().split('\n\n').at(-1)!;
    expect(last.split('\n')[0]).toBe('event: error');
    expect(JSON.parse(last.slice(last.indexOf('data: ') + 6))).toMatchObject({
      type: 'error',
      error: { type: 'overloaded_error', message: expect.stringMatching(/shutting down/) },
      request_id: requestId,
    });
    await exited;
    expect(stderr).toContain('signal repeated: ending calls in flight now');
    expect(processesOn(dataDir)).toEqual([]);

    // The embedded database, opened again: the call was written during the drain.
    const db = await openDatabase({ url: null, dataDir });
    try {
      const [row] = await db.sql`select * from calls where id = ${requestId}`;
      expect(row).toMatchObject({ stream: true, partial: true, error_type: 'shutdown' });
    } finally {
      await db.close();
    }
  }, 120_000);
});

describe('Ctrl-C on `pnpm emulator`', () => {
  it('stops quietly: no failure lines from pnpm, and no failure exit', async () => {
    const port = await freePort();
    const run = spawn('pnpm', ['emulator', '--port', String(port)], {
      cwd: ROOT,
      env: inherited,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    run.stdout!.on('data', (d) => (output += d));
    run.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((r) => run.once('exit', (code) => r(code)));
    await expect
      .poll(() => output, { timeout: 60_000, interval: 50 })
      .toContain('Keygate emulator listening');
    process.kill(-run.pid!, 'SIGINT');
    expect(await exited).toBe(0);
    expect(output).not.toMatch(/ELIFECYCLE|ERR_PNPM|Command failed/);
  }, 90_000);
});
