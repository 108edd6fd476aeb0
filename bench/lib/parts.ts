/** A V8 .cpuprofile (what `node --cpu-prof` writes). */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  samples: number[];
}

/** Parts of a call's path, by where the code lives: the first rule that matches a frame names it. */
const RULES: [RegExp, string][] = [
  [/auth\/(middleware|resolver|keys)\.ts|lib\/credentials/, 'auth (key lookup)'],
  [
    /limits\/|budgets\/|billing\/(standing|view|lifecycle)|admission/,
    'admission (limits, budgets, billing standing)',
  ],
  [/proxy\/(validate|json-body|body)\.ts|@keygate\/pdf|packages\/pdf/, 'body read + validation'],
  [/usage-tap|output-estimate|sse-framer/, 'usage tap (SSE/JSON)'],
  [/metrics\/access-log|pino/, 'access line (pino)'],
  [/metrics\/metrics|prom-client/, 'metrics'],
  [/call-log\/(spool|segment)/, 'spool (append, group commit)'],
  // The call log's thread has a profile of its own (--cpu-prof writes one per thread); its hand-over is here.
  [/call-log\/(writer|thread)|store\/calls|postgres@/, 'call log (writer, insert, hand-over)'],
  [/proxy\/(forward|headers|call-result|routes|in-flight)|undici/, 'forward (undici, headers)'],
  [/src\/streams\/|proxy\/(keep-alive|resume)/, 'streams (keep-alive, resumable)'],
  [/hono/, 'hono routing + node-server adapter'],
  [/app\.ts|lib\/(errors|ids|logger)/, 'app middleware (request id, errors)'],
  [/^node:_http|^node:net|^node:stream|^node:internal\/streams/, 'node http/net'],
];

/**
 * CPU samples by part of the call path. A sample goes to the innermost frame that names a
 * part (so node's socket writes under the access line count as the access line); samples
 * with no such frame are `other`. Samples before the first request are left out (start-up).
 */
export function partsOf(profile: CpuProfile): { part: string; share: number }[] {
  const parent = new Map<number, number>();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const partOf = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = partOf.get(id);
    if (known) return known;
    const { functionName, url } = byId.get(id)!.callFrame;
    let part: string | null = null;
    if (functionName === '(idle)') part = '(idle)';
    else if (functionName === '(garbage collector)') part = 'garbage collector';
    else part = RULES.find(([re]) => re.test(url))?.[1] ?? null;
    const p = parent.get(id);
    const found = part ?? (p === undefined ? 'other' : resolve(p));
    partOf.set(id, found);
    return found;
  };
  let started = false;
  const counts = new Map<string, number>();
  let total = 0;
  for (const id of profile.samples) {
    const part = resolve(id);
    if (!started && part !== 'forward (undici, headers)') continue;
    started = true;
    if (part === '(idle)') continue;
    counts.set(part, (counts.get(part) ?? 0) + 1);
    total++;
  }
  return [...counts].sort((a, b) => b[1] - a[1]).map(([part, n]) => ({ part, share: n / total }));
}
