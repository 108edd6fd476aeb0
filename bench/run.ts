import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { makePaddedTestPdf } from '@keygate/pdf';
import { DATABASE_URL, ROOT, spawnArm, type Arm } from './lib/arms';
import {
  closePhaseClients,
  heldStreams,
  largeBodies,
  saturation,
  serialRounds,
  streaming,
  wrkRounds,
  type HeldFigures,
  type Target,
} from './lib/phases';
import { BODY_SIZES_KB, bodySizes } from './lib/body-sizes';
import { nginxIfInstalled } from './lib/nginx';
import { renderResults, type Results } from './lib/report';
import { closeStreamClient } from './lib/streams';
import { ensureWrk, runWrk } from './lib/wrk';

const QUICK = process.env.BENCH_QUICK === '1';
/** BENCH_PHASES=latency,sizes,saturation,streaming,held,pdf runs a subset (for working on one figure). */
const PHASES = new Set(
  (process.env.BENCH_PHASES ?? 'latency,sizes,saturation,streaming,held,pdf').split(','),
);
const PLAN = {
  latency: { rounds: QUICK ? 2 : 8, seconds: QUICK ? 1 : 2 },
  latency100k: { rounds: QUICK ? 1 : 3, seconds: QUICK ? 1 : 2 },
  sizes: { sizesKb: BODY_SIZES_KB, rounds: QUICK ? 1 : 4, seconds: QUICK ? 1 : 1.5 },
  saturation: { connections: QUICK ? [64] : [16, 64, 256], rounds: QUICK ? 1 : 4, seconds: QUICK ? 2 : 3 },
  streaming: { rounds: QUICK ? 1 : 6, perRound: 25, spacingMs: 25, deltas: 32, intervalMs: 20 },
  held: { streams: QUICK ? 1_000 : 2_000 },
  pdf: { rounds: QUICK ? 1 : 5, sizesMb: [10, 30] },
};
const PROVIDER_KEY = 'sk-ant-bench-0123456789abcdefghijklmnop';
/** The one app key the nginx arm swaps for the provider key. */
const NGINX_APP_KEY = 'kg_live_nginxbench0123456789abcdefghij';
const MODEL = 'claude-opus-4-5';
const startedAt = new Date();
const deadline = setTimeout(() => {
  console.error('bench: over 30 minutes, giving up');
  process.exit(2);
}, 30 * 60_000);
deadline.unref();

const wrkVersion = ensureWrk();
const work = mkdtempSync(join(tmpdir(), 'keygate-bench-'));
const running: Arm[] = [];
const profileArgs = process.env.BENCH_CPU_PROF
  ? [`--cpu-prof`, `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
  : [];

try {
  const main = await startArms({ withNoLog: true, execArgv: [] });
  const { direct, nginx, floor, gateway, nolog } = main.targets;
  const all = [direct, ...(nginx ? [nginx] : []), floor, gateway, nolog!];
  const three = [direct, ...(nginx ? [nginx] : []), floor, gateway];

  const body1k = writeBody('1k.json', messagesBody(900));
  const body100k = writeBody('100k.json', messagesBody(100 * 1024));
  for (const t of all) {
    const check = await runWrk({
      url: t.url,
      headers: t.headers,
      bodyFile: body1k,
      connections: 1,
      seconds: 1,
    });
    if (check.errors > 0 || check.requests === 0)
      throw new Error(`${t.name}: ${check.errors} errors in the smoke run`);
  }
  const rssIdle = Object.fromEntries(main.arms.map((a) => [a.name, a.rss()]));

  console.log('warm-up…');
  await wrkRounds(all, { bodyFile: body1k, connections: 32, seconds: QUICK ? 1 : 3, rounds: 1 });
  await serialRounds(all, { body: readFileSync(body1k), seconds: 1, rounds: 1 });
  const rssWarm = Object.fromEntries(main.arms.map((a) => [a.name, a.rss()]));

  console.log('latency at concurrency 1…');
  const latency = PHASES.has('latency')
    ? await serialRounds(all, { body: readFileSync(body1k), ...PLAN.latency })
    : new Map();
  const latency100k = PHASES.has('latency')
    ? await serialRounds(three, { body: readFileSync(body100k), ...PLAN.latency100k })
    : new Map();

  console.log('Claude Code-shaped bodies by size, at concurrency 1…');
  const sizes = PHASES.has('sizes') ? await bodySizes(three, PLAN.sizes) : new Map();

  console.log('throughput at saturation…');
  const sat = PHASES.has('saturation')
    ? await saturation(all, { bodyFile: body1k, ...PLAN.saturation })
    : { runs: new Map(), maxRss: new Map() };

  console.log('streaming…');
  const paced = {
    'x-emulator-scenario': 'paced',
    'x-emulator-deltas': String(PLAN.streaming.deltas),
    'x-emulator-interval-ms': String(PLAN.streaming.intervalMs),
  };
  const streamBody = messagesBody(900, { stream: true });
  const stream = !PHASES.has('streaming')
    ? new Map()
    : await streaming(
        three.map((t) => ({
          name: t.name,
          url: t.url,
          headers: { ...t.headers, ...paced },
          body: streamBody,
        })),
        PLAN.streaming,
      );

  console.log('large PDF bodies…');
  const pdf: Results['pdf'] = {};
  for (const mb of PHASES.has('pdf') ? PLAN.pdf.sizesMb : [])
    pdf[mb] = await largeBodies(three, await pdfBody(mb), PLAN.pdf.rounds);

  const stats: Record<string, Record<string, unknown>> = {};
  for (const a of main.arms.reverse()) stats[a.name] = await stop(a);

  const held: Record<string, HeldFigures> = {};
  if (PHASES.has('held')) {
    console.log(`holding ${PLAN.held.streams} slow streams through each arm (fresh processes)…`);
    const fresh = await startArms({ withNoLog: false, execArgv: ['--expose-gc'] });
    const slow = {
      'x-emulator-scenario': 'paced',
      'x-emulator-deltas': '400',
      'x-emulator-interval-ms': '250',
    };
    for (const t of [fresh.targets.direct, fresh.targets.floor, fresh.targets.gateway]) {
      held[t.name] = await heldStreams(
        { arm: t.arm, url: t.url, headers: { ...t.headers, ...slow }, body: streamBody },
        PLAN.held.streams,
      );
    }
    for (const a of fresh.arms.reverse()) await stop(a);
  }

  const results: Results = {
    machine: {
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      ramGb: totalmem() / 2 ** 30,
      node: process.version,
      wrk: wrkVersion,
    },
    startedAt,
    minutes: (Date.now() - startedAt.getTime()) / 60_000,
    command: `pnpm bench${QUICK ? ' (BENCH_QUICK=1)' : ''}${process.env.BENCH_PHASES ? ` (BENCH_PHASES=${process.env.BENCH_PHASES})` : ''}`,
    plan: PLAN,
    rssIdle,
    rssWarm,
    latency,
    latency100k,
    sizes,
    saturation: sat,
    streaming: stream,
    held,
    pdf,
    stats,
  };
  const out = process.env.BENCH_OUT ?? join(ROOT, 'bench', 'RESULTS.md');
  writeFileSync(
    out,
    keepOtherSections(renderResults(results), existsSync(out) ? readFileSync(out, 'utf8') : ''),
  );
  console.log(`wrote ${out}`);
} finally {
  for (const a of running.splice(0).reverse()) await a.close();
  await closeStreamClient();
  await closePhaseClients();
  rmSync(work, { recursive: true, force: true });
}

/** The emulator, then the floor and the gateway (and one with the call log off) in front of it, each in its own process. */
async function startArms(o: { withNoLog: boolean; execArgv: string[] }) {
  const emulator = await spawnArm(
    'emulator',
    'bench/servers/emulator.ts',
    { BENCH_PROVIDER_KEY: PROVIDER_KEY },
    o.execArgv,
  );
  running.push(emulator);
  const upstream = {
    BENCH_UPSTREAM: emulator.url,
    BENCH_PROVIDER_KEY: PROVIDER_KEY,
    BENCH_DATABASE_URL: DATABASE_URL,
  };
  const spawned = await Promise.all([
    spawnArm('floor', 'bench/servers/floor.ts', upstream, o.execArgv),
    spawnArm('gateway', 'bench/servers/gateway.ts', { ...upstream, BENCH_CALL_LOG: 'on' }, [
      ...o.execArgv,
      ...profileArgs,
    ]),
    ...(o.withNoLog
      ? [
          spawnArm(
            'gateway-nolog',
            'bench/servers/gateway.ts',
            { ...upstream, BENCH_CALL_LOG: 'off' },
            o.execArgv,
          ),
        ]
      : []),
  ]);
  running.push(...spawned);
  const [floor, gateway, nolog] = spawned;
  // nginx in the main run only (the held-streams run measures node processes).
  const nginx = o.withNoLog
    ? await nginxIfInstalled(join(work, 'nginx'), emulator.url, NGINX_APP_KEY, PROVIDER_KEY)
    : null;
  if (nginx) running.push(nginx);
  const provider = {
    'content-type': 'application/json',
    'anthropic-version': '2023-06-01',
    'x-api-key': PROVIDER_KEY,
  };
  const appKey = (a: Arm) => ({
    'content-type': 'application/json',
    'anthropic-version': '2023-06-01',
    authorization: `Bearer ${a.info.appKey}`,
  });
  const target = (name: string, arm: Arm, headers: Record<string, string>): Target => ({
    name,
    arm,
    url: `${arm.url}/v1/messages`,
    headers,
  });
  return {
    arms: [emulator, ...spawned, ...(nginx ? [nginx] : [])],
    targets: {
      direct: target('direct', emulator, provider),
      nginx: nginx
        ? target('nginx', nginx, {
            'content-type': 'application/json',
            'anthropic-version': '2023-06-01',
            authorization: `Bearer ${NGINX_APP_KEY}`,
          })
        : undefined,
      floor: target('floor', floor!, provider),
      gateway: target('gateway', gateway!, appKey(gateway!)),
      nolog: nolog ? target('gateway-nolog', nolog, appKey(nolog)) : undefined,
    },
  };
}

async function stop(arm: Arm): Promise<Record<string, unknown>> {
  running.splice(running.indexOf(arm), 1);
  return arm.close();
}

function messagesBody(textBytes: number, extra: Record<string, unknown> = {}): string {
  const words = 'the quick brown fox jumps over a lazy dog while keygate counts every token ';
  const text = words.repeat(Math.ceil(textBytes / words.length)).slice(0, textBytes);
  return JSON.stringify({
    model: MODEL,
    max_tokens: 256,
    messages: [{ role: 'user', content: text }],
    ...extra,
  });
}

function writeBody(name: string, body: string): string {
  const file = join(work, name);
  writeFileSync(file, body);
  return file;
}

/** A messages request of about `mb` MB: one base64 PDF document and a question. */
async function pdfBody(mb: number): Promise<Buffer> {
  const pdf = await makePaddedTestPdf({ pages: 4, targetBytes: Math.floor(((mb * 2 ** 20) / 4) * 3) - 4096 });
  const data = Buffer.from(pdf).toString('base64');
  const content = [
    { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data } },
    { type: 'text', text: 'Summarize this document.' },
  ];
  return Buffer.from(
    JSON.stringify({ model: MODEL, max_tokens: 256, messages: [{ role: 'user', content }] }),
  );
}

/**
 * The side-by-side run rewrites its own sections; the sections other scripts add (bench/embedded.ts,
 * bench/spool.ts, …) are kept, from the first heading (or its marker comment) this run does not write.
 */
function keepOtherSections(fresh: string, previous: string): string {
  const own = new Set([...fresh.matchAll(/^## .*$/gm)].map((m) => m[0]));
  const foreign = [...previous.matchAll(/^(?:<!--[^\n]*-->\n)?(## .*)$/gm)].find((m) => !own.has(m[1]!));
  return foreign ? `${fresh.trimEnd()}\n\n${previous.slice(foreign.index)}` : fresh;
}
