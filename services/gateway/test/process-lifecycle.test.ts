import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store';
import { newDataDir as tempDataDir } from './data-dir';
import { freePort } from './kit/free-port';
import { childEnv, keygateCommand, type SpawnedGateway, spawnGateway } from './kit/gateway';

/**
 * The gateway as a process manager meets it: started by `pnpm start` or the bin, on the
 * embedded PostgreSQL in a data dir, stopped by a signal to the pid it started.
 */
const dirs: string[] = [];
const started: SpawnedGateway[] = [];

afterAll(async () => {
  await Promise.all(started.map((gw) => gw.stop('SIGKILL')));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Starts `keygate serve` (or `pnpm start`); resolves once /health answers, or when it exits first. */
async function start(dataDir: string, via: 'bin' | 'pnpm' = 'bin', port?: number): Promise<SpawnedGateway> {
  const env = childEnv({ KEYGATE_DATA_DIR: dataDir, KEYGATE_LOG_LEVEL: 'warn' });
  const gw = await spawnGateway({ env, port: port ?? (await freePort()), via, mayExit: true });
  started.push(gw);
  return gw;
}

function cli(
  env: NodeJS.ProcessEnv,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const command = keygateCommand(args);
  return new Promise((resolve) => {
    execFile(command.file, command.args, { env, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function json(env: NodeJS.ProcessEnv, args: string[]) {
  const r = await cli(env, [...args, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

function newDataDir(): string {
  const d = tempDataDir('keygate-life-');
  dirs.push(d);
  return d;
}

const message = (key: string, headers: Record<string, string> = {}, stream = false): RequestInit => ({
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
  body: JSON.stringify({
    model: 'claude-opus-4-5',
    max_tokens: 16,
    stream,
    messages: [{ role: 'user', content: 'hello' }],
  }),
});

async function callCount(dataDir: string, accountId: string): Promise<number> {
  const db = await openDatabase({ url: null, dataDir });
  try {
    const [row] = await db.sql<
      { n: number }[]
    >`select count(*)::int as n from calls where account_id = ${accountId}`;
    return row!.n;
  } finally {
    await db.close();
  }
}

describe('one data dir, one gateway', () => {
  it('a second server on the same data dir refuses in one line; the first keeps serving and nothing is lost', async () => {
    const dataDir = newDataDir();
    const first = await start(dataDir);
    const account = await json(first.env, ['account', 'create', '--name', 'First', '--plan', 'solo']);
    const key = await json(first.env, ['key', 'create', '--account', account.id, '--test']);

    const second = await start(dataDir);
    expect(await second.exited).toBe(1);
    const lines = second.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^keygate: cannot start: a gateway \\(pid ${first.proc.pid}\\) is already serving the data dir .* at ${first.url}`,
      ),
    );

    const res = await fetch(`${first.url}/v1/messages`, message(key.key));
    expect(res.status).toBe(200);
    first.proc.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const again = await start(dataDir);
    const accounts = await json(again.env, ['account', 'list']);
    expect(accounts.map((a: { id: string }) => a.id)).toContain(account.id);
    again.proc.kill('SIGTERM');
    expect(await again.exited).toBe(0);
    expect(await callCount(dataDir, account.id)).toBe(1);
  }, 120_000);

  it('a port in use is one clear line, not a stack trace', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const started = await start(newDataDir(), 'bin', port);
      expect(await started.exited).toBe(1);
      expect(started.stderr().trim().split('\n')).toEqual([
        `keygate: cannot start: port ${port} on 127.0.0.1 is already in use (another gateway, or another program); stop it or set PORT`,
      ]);
    } finally {
      blocker.close();
    }
  }, 60_000);

  it('a data dir written by the previous engine (PGlite) is detected, and the command that converts it named', async () => {
    const dataDir = newDataDir();
    mkdirSync(join(dataDir, 'pgdata/base'), { recursive: true });
    writeFileSync(join(dataDir, 'pgdata/PG_VERSION'), '18\n');
    const started = await start(dataDir);
    expect(await started.exited).toBe(1);
    expect(started.stderr().trim().split('\n')).toHaveLength(1);
    expect(started.stderr()).toMatch(
      /written by the previous embedded engine \(PGlite\).*keygate migrate-data-dir/,
    );
    const listed = await cli(started.env, ['account', 'list', '--json']);
    expect(listed.code).toBe(1);
    expect(listed.stdout).toBe('');
    expect(listed.stderr).toMatch(/keygate migrate-data-dir/);
  }, 60_000);
});

describe('SIGTERM to the pid `pnpm start` started', () => {
  it('lets calls and streams in flight finish, records every call, and exits 0', async () => {
    const dataDir = newDataDir();
    const gw = await start(dataDir, 'pnpm');
    const account = await json(gw.env, ['account', 'create', '--name', 'Drain', '--plan', 'solo']);
    const key = await json(gw.env, ['key', 'create', '--account', account.id, '--test']);

    const slow = { 'x-emulator-scenario': 'slow_first_byte', 'x-emulator-delay-ms': '600' };
    const paced = {
      'x-emulator-scenario': 'paced',
      'x-emulator-deltas': '15',
      'x-emulator-interval-ms': '50',
    };
    const calls = Array.from({ length: 4 }, () =>
      fetch(`${gw.url}/v1/messages`, message(key.key, slow)).then(async (r) => ({
        status: r.status,
        body: await r.text(),
      })),
    );
    const opened = Array.from({ length: 4 }, () =>
      fetch(`${gw.url}/v1/messages`, message(key.key, paced, true)),
    );
    // The streams' headers are out: they (and the slow calls sent before them) are in flight.
    await Promise.all(opened);
    const streams = opened.map(async (r) => {
      const res = await r;
      return { status: res.status, body: await res.text() };
    });
    gw.proc.kill('SIGTERM');

    const answers = await Promise.all([...calls, ...streams]);
    for (const a of answers) expect(a.status).toBe(200);
    for (const s of answers.slice(4)) expect(s.body).toContain('event: message_stop');
    expect(await gw.exited).toBe(0);
    expect(await callCount(dataDir, account.id)).toBe(8);
  }, 120_000);
});
