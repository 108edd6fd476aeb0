import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BODY_1K } from './lib/body';
import { claudeCodeBody } from './lib/claude-code-body';
import { DATABASE_URL, ROOT, spawnArm, type Arm } from './lib/arms';
import { partsOf, type CpuProfile } from './lib/parts';
import { toSources } from './lib/source-maps';
import { ensureWrk, runWrk } from './lib/wrk';

/**
 * Profiles one arm under saturation: `tsx bench/profile.ts [gateway|floor] [connections] [seconds]`.
 * Writes the .cpuprofile (open it in Chrome DevTools or speedscope for the flame graph) and
 * prints the top self-time frames and the time per package. PROFILE_BODY_KB=600 sends Claude
 * Code-shaped bodies of that size in place of the 1 KB call.
 */
const [armName = 'gateway', connections = '64', seconds = '10'] = process.argv.slice(2);
const PROVIDER_KEY = 'sk-ant-bench-0123456789abcdefghijklmnop';
const dir = join(ROOT, 'bench', 'profiles');
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
ensureWrk();

const arms: Arm[] = [];
try {
  const emulator = await spawnArm('emulator', 'bench/servers/emulator.ts', {
    BENCH_PROVIDER_KEY: PROVIDER_KEY,
  });
  arms.push(emulator);
  const env = {
    BENCH_UPSTREAM: emulator.url,
    BENCH_PROVIDER_KEY: PROVIDER_KEY,
    BENCH_DATABASE_URL: DATABASE_URL,
    BENCH_CALL_LOG: process.env.BENCH_CALL_LOG ?? 'on',
  };
  // PROFILE_HEAP=1: allocations sampled too (bytes allocated by function, collected ones included).
  const heap: Record<string, string> = process.env.PROFILE_HEAP
    ? { BENCH_ALLOC_PROF: join(dir, 'alloc.heapprofile') }
    : {};
  const arm = await spawnArm(armName, `bench/servers/${armName}.ts`, { ...env, ...heap }, [
    '--cpu-prof',
    `--cpu-prof-dir=${dir}`,
  ]);
  arms.push(arm);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'anthropic-version': '2023-06-01',
    ...(arm.info.appKey ? { authorization: `Bearer ${arm.info.appKey}` } : { 'x-api-key': PROVIDER_KEY }),
  };
  const bodyFile = join(dir, 'body.json');
  // PROFILE_BODY_KB=600: a Claude Code-shaped streaming call of that size (bench/lib/claude-code-body.ts).
  const sizeKb = Number(process.env.PROFILE_BODY_KB ?? 0);
  writeFileSync(bodyFile, sizeKb > 0 ? claudeCodeBody(sizeKb * 1024) : BODY_1K);
  const run = await runWrk({
    url: `${arm.url}/v1/messages`,
    headers,
    bodyFile,
    connections: Number(connections),
    seconds: Number(seconds),
  });
  console.log(`${armName}: ${run.rps.toFixed(0)} req/s at ${connections} connections, ${run.errors} errors`);
} finally {
  for (const a of arms.reverse()) await a.close();
}

// One file per thread (CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile): the serving thread is 0;
// the call log's thread (call-log/thread.ts) has its own, listed at the end.
const profiles = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
// PROFILE_THREAD=1 summarizes the call log's thread instead.
const thread = process.env.PROFILE_THREAD ?? '0';
const file = profiles.find((f) => f.split('.').at(-3) === thread) ?? profiles[0];
if (!file) throw new Error('no .cpuprofile written');
const profile = JSON.parse(readFileSync(join(dir, file), 'utf8'));
// The arms run built code (lib/compile.ts): frames are read back to their sources first.
toSources((profile as { nodes: ProfileNode[] }).nodes.map((n) => n.callFrame));
summarize(profile);
console.log('\nby part of the call path (bench/lib/parts.ts):');
for (const { part, share } of partsOf(profile as CpuProfile))
  console.log(`${(share * 100).toFixed(1).padStart(5)}%  ${part}`);
console.log(`profile: bench/profiles/${file}`);
for (const other of profiles.filter((f) => f !== file))
  console.log(`another thread's profile: bench/profiles/${other}`);
const heapFile = readdirSync(dir).find((f) => f.endsWith('.heapprofile'));
if (heapFile) {
  const heapProfile = JSON.parse(readFileSync(join(dir, heapFile), 'utf8')) as { head: HeapNode };
  const frames: HeapNode['callFrame'][] = [];
  const collect = (n: HeapNode) => {
    frames.push(n.callFrame);
    n.children.forEach(collect);
  };
  collect(heapProfile.head);
  toSources(frames);
  summarizeHeap(heapProfile);
}

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/** Bytes allocated by function (self), from a sampling heap profile. */
function summarizeHeap(profile: { head: HeapNode }): void {
  const byFrame = new Map<string, number>();
  let total = 0;
  const walk = (n: HeapNode) => {
    const { functionName, url, lineNumber } = n.callFrame;
    const where = url
      .replace(/^file:\/\//, '')
      .replace(ROOT, '')
      .replace(/.*node_modules\/\.pnpm\/([^/]+)\/node_modules\//, '$1: ');
    const frame = `${functionName || '(anonymous)'} ${where ? `${where}:${lineNumber + 1}` : ''}`;
    byFrame.set(frame, (byFrame.get(frame) ?? 0) + n.selfSize);
    total += n.selfSize;
    for (const c of n.children) walk(c);
  };
  walk(profile.head);
  console.log(`\ntop allocation (sampled, ${(total / 2 ** 20).toFixed(0)} MB allocated in all):`);
  for (const [k, v] of [...byFrame].sort((a, b) => b[1] - a[1]).slice(0, 25))
    console.log(`${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

function summarize(profile: {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
}): void {
  const total = profile.samples.length;
  const byFrame = new Map<string, number>();
  const byPackage = new Map<string, number>();
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    if (hits === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url
      .replace(/^file:\/\//, '')
      .replace(ROOT, '')
      .replace(/.*node_modules\/\.pnpm\/([^/]+)\/node_modules\//, '$1: ');
    const frame = `${functionName || '(anonymous)'} ${where ? `${where}:${lineNumber + 1}` : ''}`;
    byFrame.set(frame, (byFrame.get(frame) ?? 0) + hits);
    const pkg =
      /node_modules\/\.pnpm\/([^/]+)/.exec(url)?.[1] ??
      (url.startsWith('node:')
        ? 'node internals'
        : url === ''
          ? functionName
          : url.includes('/services/gateway/')
            ? 'gateway'
            : 'other');
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + hits);
  }
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`)
      .join('\n');
  console.log(
    `\ntop self time (${total} samples, ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s):\n${top(byFrame, 30)}`,
  );
  console.log(`\nby package:\n${top(byPackage, 15)}`);
}
