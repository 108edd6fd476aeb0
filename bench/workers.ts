import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmulator } from '@keygate/emulator';
import { openDatabase } from '../services/gateway/src/store';
import { provision } from '../services/gateway/test/gateway-process';
import { freePort } from '../services/gateway/test/kit/free-port';
import { BODY_1K } from './lib/body';
import { ROOT } from './lib/arms';
import { ensureWrk, runWrk } from './lib/wrk';

/**
 * `keygate serve --workers 1` against `--workers 2`, in interleaved rounds (wrk, 1 KB body, 64
 * connections, call log on, external PostgreSQL): `tsx bench/workers.ts [rounds] [seconds]`.
 * Both gateways run at once; each round measures one, then the other.
 */
const [rounds = '4', seconds = '5'] = process.argv.slice(2);
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
async function serve(workers: number): Promise<string> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [join(ROOT, 'services/gateway/bin/keygate.js'), 'serve', '--workers', String(workers)],
    {
      env: {
        ...process.env,
        ...base,
        PORT: String(port),
        HOST: '127.0.0.1',
        KEYGATE_DATA_DIR: join(work, `w${workers}`),
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
      return url;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`--workers ${workers} did not start`);
}
try {
  const urls = { 1: await serve(1), 2: await serve(2) };
  await new Promise((r) => setTimeout(r, 3_000));
  const bodyFile = join(work, 'body.json');
  writeFileSync(bodyFile, BODY_1K);
  const headers = {
    authorization: `Bearer ${appKey}`,
    'content-type': 'application/json',
    'anthropic-version': '2023-06-01',
  };
  const rps = { 1: [] as number[], 2: [] as number[] };
  for (const n of [1, 2] as const)
    await runWrk({ url: `${urls[n]}/v1/messages`, headers, bodyFile, connections: 64, seconds: 2 });
  for (let r = 0; r < Number(rounds); r++)
    for (const n of r % 2 ? ([2, 1] as const) : ([1, 2] as const)) {
      const run = await runWrk({
        url: `${urls[n]}/v1/messages`,
        headers,
        bodyFile,
        connections: 64,
        seconds: Number(seconds),
      });
      rps[n].push(run.rps);
    }
  const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
  console.log(
    `--workers 1: ${rps[1].map((v) => v.toFixed(0)).join(', ')} req/s (mean ${mean(rps[1]).toFixed(0)})`,
  );
  console.log(
    `--workers 2: ${rps[2].map((v) => v.toFixed(0)).join(', ')} req/s (mean ${mean(rps[2]).toFixed(0)})`,
  );
  console.log(`ratio 2/1: ${(mean(rps[2]) / mean(rps[1])).toFixed(2)}`);
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
