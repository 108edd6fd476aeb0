/**
 * Two builds of the gateway side by side with the floor, in one run (interleaved rounds): c=1
 * latency, then wrk at 16 and 64 connections, with each arm's CPU and PostgreSQL's per request.
 *   BENCH_BASE=/path/to/other/checkout/bench/servers/gateway.ts tsx bench/before-after.ts
 * The other checkout needs its own `pnpm install`; its gateway runs from its own sources.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BODY_1K } from './lib/body';
import { spawnArm, type Arm } from './lib/arms';
import { serialRounds, wrkRounds, type Target } from './lib/phases';
import { ensureWrk } from './lib/wrk';
const DB = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BASE = process.env.BENCH_BASE;
if (!BASE) throw new Error("BENCH_BASE: the other build's bench/servers/gateway.ts");
const KEY = 'sk-ant-bench-0123456789abcdefghijklmnop';
ensureWrk();
const arms: Arm[] = [];
try {
  const emu = await spawnArm('emulator', 'bench/servers/emulator.ts', { BENCH_PROVIDER_KEY: KEY });
  arms.push(emu);
  const up = {
    BENCH_UPSTREAM: emu.url,
    BENCH_PROVIDER_KEY: KEY,
    BENCH_DATABASE_URL: DB,
    BENCH_CALL_LOG: 'on',
  };
  const [floor, base, after] = await Promise.all([
    spawnArm('floor', 'bench/servers/floor.ts', up),
    spawnArm('gateway-base', BASE, up),
    spawnArm('gateway-this', 'bench/servers/gateway.ts', up),
  ]);
  arms.push(floor!, base!, after!);
  const t = (name: string, arm: Arm, h: Record<string, string>): Target => ({
    name,
    arm,
    url: `${arm.url}/v1/messages`,
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...h },
  });
  const targets = [
    t('direct', emu, { 'x-api-key': KEY }),
    t('floor', floor!, { 'x-api-key': KEY }),
    t('gateway-base', base!, { authorization: `Bearer ${base!.info.appKey}` }),
    t('gateway-this', after!, { authorization: `Bearer ${after!.info.appKey}` }),
  ];
  const bodyFile = join(mkdtempSync(join(tmpdir(), 'keygate-sbs-')), 'body.json');
  writeFileSync(bodyFile, BODY_1K);
  await wrkRounds(targets, { bodyFile, connections: 32, seconds: 2, rounds: 1 });
  const lat = await serialRounds(targets, { body: readFileSync(bodyFile), seconds: 2, rounds: 4 });
  const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
  const d = med(lat.get('direct')!.samples);
  for (const [n, f] of lat)
    console.log(
      `c=1 ${n}: p50 ${med(f.samples).toFixed(3)} ms, added ${(med(f.samples) - d).toFixed(3)} ms, n=${f.samples.length}`,
    );
  for (const c of [16, 64]) {
    const runs = await wrkRounds(targets, { bodyFile, connections: c, seconds: 3, rounds: 4 });
    for (const [n, rs] of runs) {
      const rps = rs.reduce((s, r) => s + r.rps, 0) / rs.length;
      const reqs = rs.reduce((s, r) => s + r.requests, 0);
      const cpu = (rs.reduce((s, r) => s + r.armCpuMs, 0) * 1000) / reqs;
      const pg = (rs.reduce((s, r) => s + r.postgresCpuMs, 0) * 1000) / reqs;
      console.log(
        `c=${c} ${n}: ${rps.toFixed(0)} req/s (${rs.map((r) => r.rps.toFixed(0)).join(', ')}), CPU ${cpu.toFixed(0)} µs/req, PostgreSQL ${pg.toFixed(1)} µs/req`,
      );
    }
  }
} finally {
  for (const a of arms.reverse()) await a.close().catch(() => {});
}
