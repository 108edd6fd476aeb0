/**
 * CPU per call after quiet spells: `tsx bench/quiet-spells.ts`. Each arm (the floor, the gateway,
 * and with BENCH_BASE=<checkout>/bench/servers/gateway.ts another build's gateway) is warmed,
 * then served in windows of 1.5 s at concurrency 1, each after QUIET_S seconds (default 20) with
 * no calls, then 6 s without a pause. Claude Code-shaped streaming calls of QUIET_KB (default
 * 600). The sizes phase of `pnpm bench` visits its arms this way (each waits while the others
 * run); this isolates it. Writes the "quiet-spells" section of bench/RESULTS.md.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DATABASE_URL, revision, spawnArm, type Arm } from './lib/arms';
import { claudeCodeBody } from './lib/claude-code-body';
import { writeResultsSection } from './lib/results-section';
import { serialRun } from './lib/serial';

const PROVIDER_KEY = 'sk-ant-bench-0123456789abcdefghijklmnop';
const KB = Number(process.env.QUIET_KB ?? 600);
const QUIET_S = Number(process.env.QUIET_S ?? 20);
const WINDOWS = 4;
const WINDOW_S = 1.5;
const STEADY_S = 6;

const arms: { name: string; title: string; script: string }[] = [
  { name: 'floor', title: 'floor', script: 'bench/servers/floor.ts' },
  ...(process.env.BENCH_BASE
    ? [
        {
          name: 'gateway-base',
          title: `gateway, ${process.env.BENCH_BASE_LABEL ?? 'base'}`,
          script: process.env.BENCH_BASE,
        },
      ]
    : []),
  { name: 'gateway', title: `gateway, this tree (${revision()})`, script: 'bench/servers/gateway.ts' },
];

const body = Buffer.from(claudeCodeBody(KB * 1024));
const emulator = await spawnArm('emulator', 'bench/servers/emulator.ts', {
  BENCH_PROVIDER_KEY: PROVIDER_KEY,
});
const rows: string[] = [];
try {
  for (const a of arms) {
    const arm: Arm = await spawnArm(a.name, a.script, {
      BENCH_UPSTREAM: emulator.url,
      BENCH_PROVIDER_KEY: PROVIDER_KEY,
      BENCH_DATABASE_URL: DATABASE_URL,
      BENCH_CALL_LOG: 'on',
    });
    try {
      const url = `${arm.url}/v1/messages`;
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        ...(arm.info.appKey ? { authorization: `Bearer ${arm.info.appKey}` } : { 'x-api-key': PROVIDER_KEY }),
      };
      await serialRun(url, headers, body, 3);
      const perWindow: number[] = [];
      for (let w = 0; w < WINDOWS; w++) {
        await sleep(QUIET_S * 1000);
        perWindow.push(await cpuPerCall(arm, url, headers, WINDOW_S));
      }
      const steady = await cpuPerCall(arm, url, headers, STEADY_S);
      console.log(`${a.name}: ${perWindow.map((v) => v.toFixed(3)).join(' ')} | ${steady.toFixed(3)}`);
      rows.push(`| ${a.title} | ${perWindow.map((v) => v.toFixed(3)).join(' | ')} | ${steady.toFixed(3)} |`);
    } finally {
      await arm.close();
    }
  }
} finally {
  await emulator.close();
}

async function cpuPerCall(arm: Arm, url: string, headers: Record<string, string>, seconds: number) {
  const before = arm.cpuMs();
  const run = await serialRun(url, headers, body, seconds);
  return (arm.cpuMs() - before) / run.samples.length;
}

writeResultsSection(
  'quiet-spells',
  [
    '<!-- quiet-spells -->',
    '## CPU per call after quiet spells (`bench/quiet-spells.ts`)',
    '',
    `${new Date().toISOString()}; Claude Code-shaped streaming calls of ${KB} KB at concurrency 1, each arm in a fresh process, warmed for 3 s. CPU per call (ms, the arm's process, every thread) in windows of ${WINDOW_S} s, each after ${QUIET_S} s with no calls, then ${STEADY_S} s without a pause.`,
    '',
    `| arm | ${Array.from({ length: WINDOWS }, (_, i) => `window ${i + 1}`).join(' | ')} | then ${STEADY_S} s on |`,
    `|---|${Array.from({ length: WINDOWS + 1 }, () => '---:').join('|')}|`,
    ...rows,
    '<!-- /quiet-spells -->',
    '',
  ].join('\n'),
);
console.log('wrote the quiet-spells section of bench/RESULTS.md');
