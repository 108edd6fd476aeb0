/**
 * The call spool's hot-path cost: the same gateway build with the spool on (default settings)
 * and off (KEYGATE_SPOOL_MAX_BYTES=0), side by side in interleaved rounds against one emulator.
 * Run: `pnpm exec tsx bench/spool.ts` (PostgreSQL at TEST_DATABASE_URL); it rewrites the
 * "Call spool" section of bench/RESULTS.md.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DATABASE_URL, spawnArm, type Arm } from './lib/arms';
import { serialRun } from './lib/serial';
import { median, percentile, shuffled } from './lib/stats';
import { ensureWrk, runWrk } from './lib/wrk';
import { writeResultsSection } from './lib/results-section';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PROVIDER_KEY = 'sk-ant-bench-0123456789abcdefghijklmnop';

const wrkVersion = ensureWrk();
const work = mkdtempSync(join(tmpdir(), 'keygate-bench-spool-'));
const arms: Arm[] = [];
try {
  const emulator = await spawnArm('emulator', 'bench/servers/emulator.ts', {
    BENCH_PROVIDER_KEY: PROVIDER_KEY,
  });
  arms.push(emulator);
  const upstream = {
    BENCH_UPSTREAM: emulator.url,
    BENCH_PROVIDER_KEY: PROVIDER_KEY,
    BENCH_DATABASE_URL: DATABASE_URL,
    BENCH_CALL_LOG: 'on',
  };
  const on = await spawnArm('spool on', 'bench/servers/gateway.ts', upstream);
  const off = await spawnArm('spool off', 'bench/servers/gateway.ts', {
    ...upstream,
    BENCH_SPOOL_MAX_BYTES: '0',
  });
  arms.push(on, off);
  const text = 'the quick brown fox jumps over a lazy dog while keygate counts every token '
    .repeat(12)
    .slice(0, 900);
  const body = JSON.stringify({
    model: 'claude-opus-4-5',
    max_tokens: 256,
    messages: [{ role: 'user', content: text }],
  });
  const bodyFile = join(work, 'body.json');
  writeFileSync(bodyFile, body);
  const headers = (a: Arm) => ({
    'content-type': 'application/json',
    'anthropic-version': '2023-06-01',
    authorization: `Bearer ${a.info.appKey}`,
  });

  const samples = new Map<Arm, number[]>([
    [on, []],
    [off, []],
  ]);
  const rps = new Map<Arm, number[]>([
    [on, []],
    [off, []],
  ]);
  let errors = 0;
  for (const a of [on, off])
    await runWrk({ url: `${a.url}/v1/messages`, headers: headers(a), bodyFile, connections: 32, seconds: 2 });
  for (let round = 0; round < ROUNDS; round++) {
    for (const a of shuffled([on, off])) {
      const serial = await serialRun(`${a.url}/v1/messages`, headers(a), Buffer.from(body), 2);
      samples.get(a)!.push(...serial.samples);
      const sat = await runWrk({
        url: `${a.url}/v1/messages`,
        headers: headers(a),
        bodyFile,
        connections: 64,
        seconds: 3,
      });
      rps.get(a)!.push(sat.rps);
      errors += serial.errors + sat.errors;
    }
    console.log(`round ${round + 1}/${ROUNDS}`);
  }
  const stats = { on: await on.close(), off: await off.close() };
  arms.splice(1);

  const row = (a: Arm) => {
    const s = samples.get(a)!;
    return {
      p50: median(s),
      p99: percentile(s, 99),
      n: s.length,
      rps: rps.get(a)!.reduce((x, y) => x + y, 0) / ROUNDS,
    };
  };
  const r = { on: row(on), off: row(off) };
  const f = (n: number, d = 3) => n.toFixed(d);
  const section = `<!-- spool -->
## Call spool: hot-path cost

- Date: ${new Date().toISOString()}; ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), shared with other work; Node ${process.version}; ${wrkVersion}
- Command: \`pnpm exec tsx bench/spool.ts\` (${ROUNDS} interleaved rounds; each: 2 s at concurrency 1 over one keep-alive connection, then 3 s of wrk at 64 connections; 1 KB body; call log on in both, to PostgreSQL)
- The same build twice: **spool on** (defaults: KEYGATE_SPOOL_SYNC_MS=50, one write + fdatasync per interval) and **spool off** (KEYGATE_SPOOL_MAX_BYTES=0, records wait in memory only).

| figure | spool on | spool off | on − off |
|---|---:|---:|---:|
| c=1 p50 latency (ms) | ${f(r.on.p50)} | ${f(r.off.p50)} | ${f(r.on.p50 - r.off.p50)} |
| c=1 p99 latency (ms) | ${f(r.on.p99)} | ${f(r.off.p99)} | ${f(r.on.p99 - r.off.p99)} |
| c=1 samples | ${r.on.n} | ${r.off.n} | |
| RPS at 64 connections (mean of rounds) | ${f(r.on.rps, 0)} | ${f(r.off.rps, 0)} | ${f((100 * (r.on.rps - r.off.rps)) / r.off.rps, 1)}% |
| call records written / served | ${stats.on.callsWritten} / ${stats.on.callsServed} | ${stats.off.callsWritten} / ${stats.off.callsServed} | |

Errors: ${errors}. The request path never waits for the disk (append only buffers a line); the cost is the record's COPY line (the one the insert sends), its CRC-32 and the write, off the answer.
<!-- /spool -->
`;
  writeResultsSection('spool', section);
  console.log(section);
} finally {
  for (const a of arms.reverse()) await a.close();
  rmSync(work, { recursive: true, force: true });
}
