import { renderBodySizes, type SizeFigures } from './body-sizes';
import type { HeldFigures, LargeBodyFigures, Saturation, SerialFigures, StreamFigures } from './phases';
import { median, percentile, sum } from './stats';

export interface Results {
  machine: { cpu: string; cores: number; ramGb: number; node: string; wrk: string };
  startedAt: Date;
  minutes: number;
  command: string;
  plan: Record<string, unknown>;
  /** RSS per arm process (MB) after start, and after the warm-up. */
  rssIdle: Record<string, number>;
  rssWarm: Record<string, number>;
  latency: Map<string, SerialFigures>;
  latency100k: Map<string, SerialFigures>;
  /** Claude Code-shaped streaming calls by body size (KB), at c=1. */
  sizes: Map<number, Map<string, SizeFigures>>;
  saturation: Saturation;
  streaming: Map<string, StreamFigures>;
  held: Record<string, HeldFigures>;
  pdf: Record<number, Map<string, LargeBodyFigures>>;
  stats: Record<string, Record<string, unknown>>;
}

const COLUMNS = ['direct', 'nginx', 'floor', 'gateway', 'gateway-nolog'] as const;
const TITLES = ['direct', 'nginx (key swap only)', 'floor', 'gateway', 'gateway, call log off'];
/** The process whose memory a column reports: direct is the emulator itself. */
const PROCESS: Record<string, string> = {
  direct: 'emulator',
  nginx: 'nginx',
  floor: 'floor',
  gateway: 'gateway',
  'gateway-nolog': 'gateway-nolog',
};

const ms = (v: number | undefined, digits = 2) =>
  v === undefined || Number.isNaN(v) ? '—' : v.toFixed(digits);
const signed = (v: number | undefined, digits = 2) =>
  v === undefined || Number.isNaN(v) ? '—' : `${v >= 0 ? '+' : ''}${v.toFixed(digits)}`;
const pct = (v: number) => `${(v * 100).toFixed(0)}%`;

function row(label: string, cell: (name: string) => string): string {
  return `| ${label} | ${COLUMNS.map(cell).join(' | ')} |`;
}

export function renderResults(r: Results): string {
  type Runs = Map<string, SerialFigures>;
  const lat = (runs: Runs, name: string, p: number) => percentile(runs.get(name)?.samples ?? [], p);
  const added = (runs: Runs, name: string, p: number) =>
    name === 'direct' ? Number.NaN : lat(runs, name, p) - lat(runs, 'direct', p);
  const samples = (name: string) => r.latency.get(name)?.samples.length ?? 0;
  const wrkErrors = [...r.saturation.runs.values()]
    .flatMap((m) => [...m.values()])
    .flat()
    .reduce((n, w) => n + w.errors, 0);
  const serialErrors = [...r.latency.values(), ...r.latency100k.values()].reduce((n, f) => n + f.errors, 0);
  const conns = [...r.saturation.runs.keys()];
  const rps = (c: number, name: string) => {
    const runs = r.saturation.runs.get(c)?.get(name);
    return runs ? sum(runs.map((w) => w.rps)) / runs.length : Number.NaN;
  };
  const share = (c: number, name: string) => rps(c, name) / rps(c, 'floor');
  /** CPU µs per request over every saturation run of an arm: its own process, and PostgreSQL's. */
  const cpuPer = (name: string, field: 'armCpuMs' | 'mainThreadCpuMs' | 'postgresCpuMs') => {
    const runs = [...r.saturation.runs.values()].flatMap((m) => m.get(name) ?? []);
    return (sum(runs.map((w) => w[field])) * 1000) / sum(runs.map((w) => w.requests));
  };
  const s = (name: string) => r.streaming.get(name);
  const expectedEvents = Math.max(...(s('direct')?.events ?? [0]));
  const lost = (name: string) =>
    sum((s(name)?.events ?? []).map((e) => expectedEvents - e)) + (s(name)?.failed ?? 0);
  const ttfe = (name: string, p: number) => percentile(s(name)?.ttfe ?? [], p);
  const interval = (r.plan.streaming as { intervalMs: number }).intervalMs;
  const lateFirst = (name: string) => (s(name)?.ttfe ?? []).filter((t) => !(t < interval)).length;
  const gap = (name: string, p: number) => percentile(s(name)?.gaps ?? [], p);
  const underLoad = (name: string) => r.saturation.maxRss.get(PROCESS[name]!) ?? Number.NaN;
  const pdfFig = (mb: number, name: string) => r.pdf[mb]?.get(name);
  const pdfLatency = (mb: number, name: string) => median(pdfFig(mb, name)?.latencies ?? []);
  const pdfPeak = (mb: number, name: string) => Math.max(...(pdfFig(mb, name)?.peaks ?? [Number.NaN]));

  const lines: string[] = [];
  const out = (...l: string[]) => lines.push(...l);
  out(
    '# Keygate benchmark results',
    '',
    `- Date: ${r.startedAt.toISOString()} (run took ${r.minutes.toFixed(1)} min)`,
    `- Machine: ${r.machine.cpu}, ${r.machine.cores} cores, ${r.machine.ramGb.toFixed(1)} GB RAM; Node ${r.machine.node}; load generator ${r.machine.wrk} (1 thread)`,
    `- Command: \`${r.command}\` (from the repository root; PostgreSQL at TEST_DATABASE_URL / DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test)`,
    '- Arms, each in its own process, all calling one emulator process (0 ms think time): **direct** (client → emulator), **floor** (bench/floor.ts: node:http + undici.request + stream.pipeline), **gateway** (auth, validation, usage tap, call log to PostgreSQL with hourly rollups), **gateway, call log off** (KEYGATE_CALL_LOG=off). Every arm is built JavaScript run by plain `node` (bench/lib/compile.ts), never tsx; the gateway arms run the compiled build of the gateway (services/gateway/dist), the code `keygate serve` runs.',
    `- Rounds are interleaved (each round visits every arm once in a shuffled order), after a warm-up. Plan: \`${JSON.stringify(r.plan)}\``,
    '',
    '## Side by side',
    '',
    `| figure | ${TITLES.join(' | ')} |`,
    `|---|${COLUMNS.map(() => '---:').join('|')}|`,
    row('**c=1, 1 KB body** p50 latency (ms)', (n) => ms(lat(r.latency, n, 50), 3)),
    row('c=1, 1 KB p99 latency (ms)', (n) => ms(lat(r.latency, n, 99), 3)),
    row('c=1, 1 KB **added p50** vs direct (ms)', (n) => signed(added(r.latency, n, 50), 3)),
    row('c=1, 1 KB **added p99** vs direct (ms)', (n) => signed(added(r.latency, n, 99), 3)),
    row('c=1, 1 KB samples', (n) => String(samples(n))),
    row('c=1, 100 KB body, added p50 / p99 (ms)', (n) =>
      r.latency100k.has(n) && n !== 'direct'
        ? `${signed(added(r.latency100k, n, 50), 3)} / ${signed(added(r.latency100k, n, 99), 3)}`
        : n === 'direct'
          ? `${ms(lat(r.latency100k, n, 50), 3)} / ${ms(lat(r.latency100k, n, 99), 3)} (abs.)`
          : '—',
    ),
    ...conns.map((c) =>
      row(
        `**RPS at ${c} connections** (share of floor)`,
        (n) => `${rps(c, n).toFixed(0)} (${pct(share(c, n))})`,
      ),
    ),
    row('CPU per request at saturation, own process (µs)', (n) => ms(cpuPer(n, 'armCpuMs'), 0)),
    row('… of it on the main thread, the one serving requests (µs)', (n) =>
      ms(cpuPer(n, 'mainThreadCpuMs'), 0),
    ),
    row('PostgreSQL CPU per request at saturation (µs)', (n) => ms(cpuPer(n, 'postgresCpuMs'), 1)),
    row('stream: first event p50 (ms)', (n) => ms(ttfe(n, 50), 3)),
    row('stream: **first event added p50** vs direct (ms)', (n) =>
      s(n) && n !== 'direct' ? signed(ttfe(n, 50) - ttfe('direct', 50), 3) : '—',
    ),
    row('stream: first event p99 (ms)', (n) => ms(ttfe(n, 99), 3)),
    row('stream: gap between paced events p50 / p99 (ms)', (n) =>
      s(n) ? `${ms(gap(n, 50))} / ${ms(gap(n, 99))}` : '—',
    ),
    row('stream: gap added p50 / p99 vs direct (ms)', (n) =>
      s(n) && n !== 'direct'
        ? `${signed(gap(n, 50) - gap('direct', 50))} / ${signed(gap(n, 99) - gap('direct', 99))}`
        : '—',
    ),
    row('stream: streams / **events lost**', (n) => (s(n) ? `${s(n)!.events.length} / ${lost(n)}` : '—')),
    row('slow streams held open (flowing / asked)', (n) =>
      r.held[n] ? `${r.held[n]!.flowing} / ${r.held[n]!.requested}` : '—',
    ),
    row('RSS idle → half → all of them open (MB)', (n) =>
      r.held[n]
        ? `${ms(r.held[n]!.rssBefore, 0)} → ${ms(r.held[n]!.rssHalf, 0)} → ${ms(r.held[n]!.rssOpen, 0)}`
        : '—',
    ),
    row('**RSS per 1,000 open streams** (MB, slope from half to all open)', (n) =>
      r.held[n] ? ms(r.held[n]!.perThousand, 1) : '—',
    ),
    row('JS heap per 1,000 open streams (MB, same slope)', (n) =>
      r.held[n] ? ms(r.held[n]!.heapPerThousand, 1) : '—',
    ),
    row('RSS idle, after start (MB)', (n) => ms(r.rssIdle[PROCESS[n]!], 0)),
    row('RSS idle, after warm-up (MB)', (n) => ms(r.rssWarm[PROCESS[n]!], 0)),
    row('**RSS under load**, highest sample (MB)', (n) => ms(underLoad(n), 0)),
    ...Object.keys(r.pdf).flatMap((mbText) => {
      const mb = Number(mbText);
      return [
        row(`${mb} MB PDF request: latency p50 (ms)`, (n) =>
          pdfFig(mb, n) ? `${ms(pdfLatency(mb, n), 1)} (${pdfFig(mb, n)!.statuses.join(',')})` : '—',
        ),
        row(`${mb} MB PDF request: **added** vs direct (ms)`, (n) =>
          pdfFig(mb, n) && n !== 'direct' ? signed(pdfLatency(mb, n) - pdfLatency(mb, 'direct'), 1) : '—',
        ),
        row(`${mb} MB PDF request: **peak RSS** (MB, idle before)`, (n) =>
          pdfFig(mb, n) ? `${ms(pdfPeak(mb, n), 0)} (${ms(pdfFig(mb, n)!.rssBefore, 0)})` : '—',
        ),
      ];
    }),
    '',
    `Memory rows report each arm's own process; for **direct** that is the emulator. Errors (non-200 answers; for wrk also connect, read, write, timeouts): **${serialErrors}** at c=1, **${wrkErrors}** at saturation. Latency at c=1 comes from a minimal keep-alive client that keeps every sample (bench/lib/serial.ts); throughput from wrk.`,
    `Call log: the gateway wrote ${String(r.stats.gateway?.callsWritten ?? '?')} call records, ${String(r.stats.gateway?.callsServed ?? '?')} of them served (not served: ${String(r.stats.gateway?.notServed ?? '?')}; wrk closes its connections with requests in flight when a run ends); its hourly rollups count ${String(r.stats.gateway?.rollupRequests ?? '?')} served requests (records dropped: ${String(r.stats.gateway?.dropped ?? '?')}). With the call log off it wrote ${String(r.stats['gateway-nolog']?.callsWritten ?? '?')}.`,
    '',
  );

  if (r.sizes.size > 0)
    out(
      '## Body sizes: Claude Code-shaped calls at concurrency 1',
      '',
      "Streaming calls shaped like Claude Code's (bench/lib/claude-code-body.ts: 12 tools, three system blocks with cache_control, a tool_use / tool_result history with code's escapes and some non-ASCII; below 64 KB a short call without tools). Target (performance.md, turn 4): the gateway's added median and CPU per call within 1.2× the floor's at every size.",
      '',
      ...renderBodySizes(
        r.sizes,
        COLUMNS.slice(0, 4).map((name, i) => ({ name, title: TITLES[i]! })),
        ['gateway'],
      ),
      '',
    );

  const floorAdded50 = added(r.latency, 'floor', 50);
  const floorAdded99 = added(r.latency, 'floor', 99);
  const gwAdded50 = added(r.latency, 'gateway', 50);
  const gwAdded99 = added(r.latency, 'gateway', 99);
  const minShare = Math.min(...conns.map((c) => share(c, 'gateway')));
  const ttfeAdded = ttfe('gateway', 50) - ttfe('floor', 50);
  const memoryAbove = underLoad('gateway') - underLoad('floor');
  const logRps = Math.max(...conns.map((c) => 1 - rps(c, 'gateway') / rps(c, 'gateway-nolog')));
  const logP50 = lat(r.latency, 'gateway', 50) - lat(r.latency, 'gateway-nolog', 50);
  const perStreamMb = r.held.gateway?.perThousand ?? Number.NaN;
  const verdict = (ok: boolean) => (ok ? '**met**' : '**missed**');
  out(
    '## Targets (performance.md), relative to the floor in this run',
    '',
    '| target | measured | verdict |',
    '|---|---|---|',
    `| added p50 at c=1 ≤ floor's + 0.1 ms | gateway ${signed(gwAdded50, 3)} ms vs floor ${signed(floorAdded50, 3)} ms: ${signed(gwAdded50 - floorAdded50, 3)} ms | ${verdict(gwAdded50 - floorAdded50 <= 0.1)} |`,
    `| added p99 at c=1 ≤ floor's + 0.5 ms | gateway ${signed(gwAdded99, 3)} ms vs floor ${signed(floorAdded99, 3)} ms: ${signed(gwAdded99 - floorAdded99, 3)} ms | ${verdict(gwAdded99 - floorAdded99 <= 0.5)} |`,
    `| throughput ≥ 70% of the floor's, call log on | ${conns.map((c) => `${pct(share(c, 'gateway'))} at ${c}`).join(', ')} | ${verdict(minShare >= 0.7)} |`,
    `| stream first event added ≤ floor's + 0.5 ms (p50) | ${signed(ttfeAdded, 3)} ms over the floor | ${verdict(ttfeAdded <= 0.5)} |`,
    `| no buffering: first event well before one paced interval, gaps as upstream's | first event p50 ${ms(ttfe('gateway', 50))} ms (interval ${interval} ms; ${lateFirst('gateway')} of ${s('gateway')?.ttfe.length ?? 0} streams later than one interval, floor ${lateFirst('floor')}); gap p50 added ${signed(gap('gateway', 50) - gap('direct', 50))} ms | ${verdict(ttfe('gateway', 50) < interval / 4 && Math.abs(gap('gateway', 50) - gap('direct', 50)) < 1)} |`,
    `| 0 events lost | ${lost('gateway')} lost over ${s('gateway')?.events.length ?? 0} streams | ${verdict(lost('gateway') === 0)} |`,
    `| RSS under load ≤ floor's + 40 MB | ${ms(underLoad('gateway'), 0)} MB vs ${ms(underLoad('floor'), 0)} MB: ${signed(memoryAbove, 0)} MB | ${verdict(memoryAbove <= 40)} |`,
    `| ≤ 30 MB per 1,000 open streams | ${ms(perStreamMb, 1)} MB (${r.held.gateway?.flowing ?? 0} streams flowing) | ${verdict(perStreamMb <= 30)} |`,
    `| logging cost ≤ 5% RPS | worst ${pct(logRps)} (${conns.map((c) => `${rps(c, 'gateway').toFixed(0)} vs ${rps(c, 'gateway-nolog').toFixed(0)} at ${c}`).join('; ')}); per request: gateway process ${signed(cpuPer('gateway', 'armCpuMs') - cpuPer('gateway-nolog', 'armCpuMs'), 0)} µs CPU (its main thread ${signed(cpuPer('gateway', 'mainThreadCpuMs') - cpuPer('gateway-nolog', 'mainThreadCpuMs'), 0)} µs), PostgreSQL ${signed(cpuPer('gateway', 'postgresCpuMs') - cpuPer('gateway-nolog', 'postgresCpuMs'), 0)} µs CPU on the same two cores | ${verdict(logRps <= 0.05)} |`,
    `| logging cost ≤ 0.1 ms p50 | ${signed(logP50, 3)} ms at c=1 | ${verdict(logP50 <= 0.1)} |`,
    '',
    '## How the figures are taken',
    '',
    '- Added latency: each arm minus direct, from every sample of the interleaved c=1 rounds (1 KB body; the 100 KB row likewise).',
    "- Throughput: wrk, 1 thread, on the same machine as the servers, the emulator and PostgreSQL; each RPS is the mean of its rounds. CPU per request: the arm process's user + system time over its runs (/proc), divided by its requests, and its main thread's alone (/proc/<pid>/task/<pid>; the gateway's call log has a thread of its own); PostgreSQL's likewise, summed over its processes.",
    "- Streaming: paced streams started 25 ms apart (no two requests meet at the emulator at once); first event = time to the first complete SSE event; gaps between events more than 1 ms apart; lost = events short of direct's count.",
    '- Open streams: fresh processes with `--expose-gc`; RSS read after a full GC with half, then all of the streams open, and the slope taken, so the one-off growth from idle to busy is left out.',
    "- Memory under load: highest RSS sampled every 100 ms during the saturation runs. Peak RSS for a PDF: the process's high-water mark (VmHWM, reset before each request).",
    '',
  );
  return lines.join('\n');
}
