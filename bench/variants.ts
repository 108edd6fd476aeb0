/**
 * One build of the gateway run several ways at once: each arm is the compiled gateway with its own
 * settings, beside the floor and the call log off, in interleaved rounds (c=1 latency, then wrk).
 * Made to part the cost of one setting from the machine's spread, which on a shared 2-core VM is
 * larger than most settings move (bench/RESULTS.md, ninth round).
 *   BENCH_VARIANTS='{"handover 0":{"KEYGATE_CALL_LOG_HANDOVER_MS":"0"},"default":{}}' \
 *   BENCH_ROUNDS=8 BENCH_CONNECTIONS=16,64 tsx bench/variants.ts
 * Writes its table into the "Gateway variants" section of bench/RESULTS.md.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BODY_1K } from './lib/body';
import { spawnArm, upstreamArm, type Arm } from './lib/arms';
import { serialRounds, wrkRounds, type Target } from './lib/phases';
import { writeResultsSection } from './lib/results-section';
import { median } from './lib/stats';
import { ensureWrk } from './lib/wrk';

const KEY = 'sk-ant-bench-0123456789abcdefghijklmnop';
const DB = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const VARIANTS = JSON.parse(process.env.BENCH_VARIANTS ?? '{"default":{}}') as Record<
  string,
  Record<string, string>
>;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '16,64').split(',').map(Number);
const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
const headers = (auth: Record<string, string>) => ({
  'content-type': 'application/json',
  'anthropic-version': '2023-06-01',
  ...auth,
});

ensureWrk();
const arms: Arm[] = [];
try {
  const { emulator: emu, env: up } = await upstreamArm(KEY, DB);
  arms.push(emu);
  const target = (name: string, arm: Arm, auth: Record<string, string>): Target => ({
    name,
    arm,
    url: `${arm.url}/v1/messages`,
    headers: headers(auth),
  });
  const floor = await spawnArm('floor', 'bench/servers/floor.ts', up);
  arms.push(floor);
  const targets = [target('direct', emu, { 'x-api-key': KEY }), target('floor', floor, { 'x-api-key': KEY })];
  const gateways: [string, Record<string, string>][] = [
    ['call log off', { BENCH_CALL_LOG: 'off' }],
    // KEYGATE_X=v in a variant reaches that arm only (bench/servers/gateway.ts reads BENCH_SET_KEYGATE_X).
    ...Object.entries(VARIANTS).map(
      ([name, env]) =>
        [name, Object.fromEntries(Object.entries(env).map(([k, v]) => [`BENCH_SET_${k}`, v]))] as [
          string,
          Record<string, string>,
        ],
    ),
  ];
  for (const [name, env] of gateways) {
    const arm = await spawnArm(name, 'bench/servers/gateway.ts', { ...up, ...env });
    arms.push(arm);
    targets.push(target(name, arm, { authorization: `Bearer ${arm.info.appKey}` }));
  }
  const body = Buffer.from(BODY_1K);
  const bodyFile = join(mkdtempSync(join(tmpdir(), 'keygate-variants-')), 'body.json');
  writeFileSync(bodyFile, body);
  const started = new Date();
  // Warm-up: every arm's code optimized before anything is kept.
  const loaded = targets.filter((t) => t.name !== 'direct');
  await wrkRounds(loaded, { bodyFile, connections: 32, seconds: 2, rounds: 1 });
  await serialRounds(targets, { body, seconds: 1, rounds: 1 });

  const names = targets.map((t) => t.name);
  const cells = new Map<string, string[]>(names.map((n) => [n, []]));
  const lat = await serialRounds(targets, { body, seconds: 2, rounds: ROUNDS });
  const direct = median(lat.get('direct')!.samples);
  for (const n of names) {
    const p50 = median(lat.get(n)!.samples);
    cells.get(n)!.push(n === 'direct' ? p50.toFixed(3) : `+${(p50 - direct).toFixed(3)}`);
  }
  for (const c of CONNECTIONS) {
    const runs = await wrkRounds(loaded, { bodyFile, connections: c, seconds: 3, rounds: ROUNDS });
    const floorRps = mean(runs.get('floor')!.map((r) => r.rps));
    cells.get('direct')!.push('—', '—', '—');
    for (const n of names.slice(1)) {
      const rs = runs.get(n)!;
      const rps = mean(rs.map((r) => r.rps));
      const reqs = rs.reduce((s, r) => s + r.requests, 0);
      const per = (ms: number) => ((ms * 1000) / reqs).toFixed(0);
      cells
        .get(n)!
        .push(
          `${rps.toFixed(0)} (${(rps / floorRps).toFixed(2)}×)`,
          `${per(rs.reduce((s, r) => s + r.armCpuMs, 0))} / ${per(rs.reduce((s, r) => s + r.mainThreadCpuMs, 0))}`,
          ((rs.reduce((s, r) => s + r.postgresCpuMs, 0) * 1000) / reqs).toFixed(1),
        );
    }
  }
  const rows = [
    'c=1 p50 (ms; added vs direct)',
    ...CONNECTIONS.flatMap((c) => [
      `req/s at ${c} connections (share of floor)`,
      `CPU per request at ${c}, process / main thread (µs)`,
      `PostgreSQL CPU per request at ${c} (µs)`,
    ]),
  ];
  const settings = Object.entries(VARIANTS)
    .map(
      ([n, env]) =>
        `**${n}**: ${
          Object.entries(env)
            .map(([k, v]) => `\`${k}=${v}\``)
            .join(', ') || 'defaults'
        }`,
    )
    .join('; ');
  const section = [
    '<!-- variants -->',
    '## Gateway variants in one run (`bench/variants.ts`)',
    '',
    `${started.toISOString()}, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(
        ' ',
      )} at the end; ${ROUNDS} interleaved rounds, 1 KB body, call log to the local PostgreSQL (a fresh schema per gateway). ${settings}.`,
    '',
    `| figure | ${names.join(' | ')} |`,
    `|---|${names.map(() => '---:').join('|')}|`,
    ...rows.map((r, i) => `| ${r} | ${names.map((n) => cells.get(n)![i] ?? '—').join(' | ')} |`),
    '<!-- /variants -->',
    '',
  ].join('\n');
  writeResultsSection('variants', section);
  console.log(section);
} finally {
  for (const a of arms.reverse()) await a.close().catch(() => {});
}
