/**
 * The gateway's reading of a messages body in process, by part, for Claude Code-shaped bodies of
 * each size (lib/claude-code-body.ts): the bounds scan (json-scan.wat), the parse of the skeleton
 * (JsonBody.parse, members nothing reads left out), and the whole of `readMessagesBody` (scan,
 * parse and checks), the median of RUNS runs each. No network, no other process: what the call
 * path spends between a body's last byte and its admission. Writes the "body-check" section of
 * bench/RESULTS.md. `tsx bench/body-check.ts`
 */
import { performance } from 'node:perf_hooks';
import { LONG_STRING, JsonBody } from '../services/gateway/src/pipeline/json-body';
import { boundJsonNotingLongStrings } from '../services/gateway/src/pipeline/json-bounds';
import { readMessagesBody } from '../services/gateway/src/proxy/validate';
import { revision } from './lib/arms';
import { BODY_SIZES_KB } from './lib/body-sizes';
import { claudeCodeBody } from './lib/claude-code-body';
import { writeResultsSection } from './lib/results-section';
import { median } from './lib/stats';

const RUNS = Number(process.env.BENCH_RUNS ?? 300);
const rows: string[] = [];
for (const kb of BODY_SIZES_KB) {
  const body = claudeCodeBody(kb * 1024);
  const t = { scan: [] as number[], parse: [] as number[], whole: [] as number[] };
  let skeleton = 0;
  for (let i = 0; i < RUNS; i++) {
    const a = performance.now();
    const { long } = await boundJsonNotingLongStrings(body, LONG_STRING);
    const b = performance.now();
    skeleton = JsonBody.parse(body, { longStrings: long }).structure.length;
    const c = performance.now();
    await readMessagesBody(body, { maxPdfPages: 100 });
    const d = performance.now();
    t.scan.push(b - a);
    t.parse.push(c - b);
    t.whole.push(d - c);
  }
  const ms = (v: number[]) => median(v).toFixed(3);
  rows.push(
    `| ${kb >= 1024 ? `${kb / 1024} MB` : `${kb} KB`} | ${body.length.toLocaleString('en')} | ${skeleton.toLocaleString('en')} | ${ms(t.scan)} | ${ms(t.parse)} | ${ms(t.whole)} |`,
  );
}
const section = [
  '<!-- body-check -->',
  '## Reading a messages body in process (`tsx bench/body-check.ts`)',
  '',
  `${new Date().toISOString()}, ${revision()}, Node ${process.version}; the median of ${RUNS} runs. "parse, whole" parses the full skeleton; \`readMessagesBody\` (what a call runs) leaves out the members nothing reads.`,
  '',
  '| body | bytes | skeleton (bytes) | bounds scan (ms) | parse, whole skeleton (ms) | `readMessagesBody`: scan, parse, checks (ms) |',
  '|---|---:|---:|---:|---:|---:|',
  ...rows,
  '<!-- /body-check -->',
  '',
].join('\n');
writeResultsSection('body-check', section);
console.log(section);
