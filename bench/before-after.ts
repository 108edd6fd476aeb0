/**
 * Two builds of the gateway side by side with the floor and nginx, in one run (interleaved
 * rounds): c=1 latency, then wrk at 16 and 64 connections, with each arm's CPU and PostgreSQL's
 * per request, and Claude Code-shaped calls by body size at c=1 (lib/body-sizes.ts). Writes its
 * tables into the "Before and after" section of bench/RESULTS.md (BENCH_SECTION and
 * BENCH_SECTION_TITLE name another). BENCH_SIZES_ONLY=1 runs the body sizes alone (a few minutes).
 *   BENCH_BASE=/path/to/other/checkout/bench/servers/gateway.ts \
 *   BENCH_BASE_LABEL='main at 52d71ab' tsx bench/before-after.ts
 * The other checkout needs its own `pnpm install`. Both arms run built (lib/compile.ts): each
 * checkout's compiled gateway where its build has the library entry, else bundled from its sources.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BODY_1K } from './lib/body';
import { BODY_SIZES_KB, bodySizes, renderBodySizes } from './lib/body-sizes';
import { revision, spawnArm, upstreamArm, type Arm } from './lib/arms';
import { nginxIfInstalled } from './lib/nginx';
import { serialRounds, wrkRounds, type Target } from './lib/phases';
import { ensureWrk } from './lib/wrk';
import { writeResultsSection } from './lib/results-section';
const DB = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BASE = process.env.BENCH_BASE;
if (!BASE) throw new Error("BENCH_BASE: the other build's bench/servers/gateway.ts");
const KEY = 'sk-ant-bench-0123456789abcdefghijklmnop';
const NGINX_APP_KEY = 'kg_live_nginxbench0123456789abcdefghij';
const BASE_LABEL = process.env.BENCH_BASE_LABEL ?? 'before';
const SIZES_ONLY = process.env.BENCH_SIZES_ONLY === '1';
const SIZE_ROUNDS = Number(process.env.BENCH_SIZE_ROUNDS ?? 4);
/** The RESULTS.md section written (`<!-- name -->`…`<!-- /name -->`), so a comparison can keep its own. */
const SECTION = process.env.BENCH_SECTION ?? 'before-after';
const TITLE = process.env.BENCH_SECTION_TITLE ?? 'Before and after in one run (`bench/before-after.ts`)';
const THIS_LABEL = `this tree (${revision()})`;
const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
ensureWrk();
const arms: Arm[] = [];
try {
  const { emulator: emu, env: up } = await upstreamArm(KEY, DB);
  arms.push(emu);
  const [floor, base, after] = await Promise.all([
    spawnArm('floor', 'bench/servers/floor.ts', up),
    spawnArm('gateway-base', BASE, up),
    spawnArm('gateway-this', 'bench/servers/gateway.ts', up),
  ]);
  arms.push(floor!, base!, after!);
  const nginx = await nginxIfInstalled(
    mkdtempSync(join(tmpdir(), 'keygate-sbs-nginx-')),
    emu.url,
    NGINX_APP_KEY,
    KEY,
  );
  if (nginx) arms.push(nginx);
  const t = (name: string, arm: Arm, h: Record<string, string>): Target => ({
    name,
    arm,
    url: `${arm.url}/v1/messages`,
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...h },
  });
  const targets = [
    t('direct', emu, { 'x-api-key': KEY }),
    ...(nginx ? [t('nginx', nginx, { authorization: `Bearer ${NGINX_APP_KEY}` })] : []),
    t('floor', floor!, { 'x-api-key': KEY }),
    t('gateway-base', base!, { authorization: `Bearer ${base!.info.appKey}` }),
    t('gateway-this', after!, { authorization: `Bearer ${after!.info.appKey}` }),
  ];
  const bodyFile = join(mkdtempSync(join(tmpdir(), 'keygate-sbs-')), 'body.json');
  writeFileSync(bodyFile, BODY_1K);
  await wrkRounds(targets, { bodyFile, connections: 32, seconds: 2, rounds: 1 });
  const sizes = await bodySizes(targets, { sizesKb: BODY_SIZES_KB, rounds: SIZE_ROUNDS, seconds: 1.5 });
  const lat = await serialRounds(targets, {
    body: readFileSync(bodyFile),
    seconds: SIZES_ONLY ? 0 : 2,
    rounds: SIZES_ONLY ? 0 : 4,
  });
  const started = new Date();
  const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
  const d = med(lat.get('direct')!.samples);
  const names = targets.map((x) => x.name);
  const cells = new Map<string, string[]>(names.map((n) => [n, []]));
  for (const [n, f] of SIZES_ONLY ? [] : lat) {
    const line = `c=1 ${n}: p50 ${med(f.samples).toFixed(3)} ms, added ${(med(f.samples) - d).toFixed(3)} ms, n=${f.samples.length}`;
    console.log(line);
    cells.get(n)!.push(n === 'direct' ? med(f.samples).toFixed(3) : `+${(med(f.samples) - d).toFixed(3)}`);
  }
  for (const c of SIZES_ONLY ? [] : [16, 64]) {
    const runs = await wrkRounds(targets, { bodyFile, connections: c, seconds: 3, rounds: 4 });
    const floorRps = mean(runs.get('floor')!.map((r) => r.rps));
    for (const [n, rs] of runs) {
      const rps = mean(rs.map((r) => r.rps));
      const reqs = rs.reduce((s, r) => s + r.requests, 0);
      const cpu = (rs.reduce((s, r) => s + r.armCpuMs, 0) * 1000) / reqs;
      const pg = (rs.reduce((s, r) => s + r.postgresCpuMs, 0) * 1000) / reqs;
      console.log(
        `c=${c} ${n}: ${rps.toFixed(0)} req/s (${rs.map((r) => r.rps.toFixed(0)).join(', ')}), CPU ${cpu.toFixed(0)} µs/req, PostgreSQL ${pg.toFixed(1)} µs/req`,
      );
      cells
        .get(n)!
        .push(`${rps.toFixed(0)} (${(rps / floorRps).toFixed(2)}×)`, cpu.toFixed(0), pg.toFixed(1));
    }
  }
  const label = (n: string) =>
    n === 'gateway-base' ? `gateway, ${BASE_LABEL}` : n === 'gateway-this' ? `gateway, ${THIS_LABEL}` : n;
  const rows = [
    'c=1 p50 (ms; added vs direct)',
    ...[16, 64].flatMap((c) => [
      `req/s at ${c} connections (share of floor)`,
      `CPU per request at ${c}, own process (µs)`,
      `PostgreSQL CPU per request at ${c} (µs)`,
    ]),
  ];
  const section = [
    `<!-- ${SECTION} -->`,
    `## ${TITLE}`,
    '',
    `${started.toISOString()}, ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')} load average at the end; interleaved rounds, 1 KB body, call log on to the local PostgreSQL (fresh schema per gateway); nginx does only the key swap.`,
    '',
    ...(SIZES_ONLY
      ? []
      : [
          `| figure | ${names.map(label).join(' | ')} |`,
          `|---|${names.map(() => '---:').join('|')}|`,
          ...rows.map((r, i) => `| ${r} | ${names.map((n) => cells.get(n)![i] ?? '—').join(' | ')} |`),
          '',
        ]),
    `Claude Code-shaped streaming calls by body size at c=1 (bench/lib/claude-code-body.ts), ${SIZE_ROUNDS} interleaved rounds of 1.5 s per arm and size:`,
    '',
    ...renderBodySizes(
      sizes,
      names.map((name) => ({ name, title: label(name) })),
      ['gateway-base', 'gateway-this'],
    ),
    `<!-- /${SECTION} -->`,
    '',
  ].join('\n');
  writeResultsSection(SECTION, section);
  console.log(section);
} finally {
  for (const a of arms.reverse()) await a.close().catch(() => {});
}
