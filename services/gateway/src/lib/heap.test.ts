import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT } from './heap';

interface Limit {
  /** KB live after the collection, and the old generation's next limit. */
  old: number;
  limit: number;
  /** The factor, where V8 prints it (Node 20; Node 22 and later print the sizes alone). */
  factor: string | null;
}

/** A child node process with V8's own trace of each new old-generation limit. */
function limitsSet(tune: boolean): Limit[] {
  const heap = JSON.stringify(new URL('./heap.ts', import.meta.url).href);
  const script = `
    ${tune ? `const { tuneHeap } = await import(${heap}); tuneHeap(); tuneHeap();` : ''}
    const live = [];
    for (let i = 0; i < 200000; i++) live.push({ i, s: 'v' + i });
    globalThis.gc();
    globalThis.gc();
    console.log('kept', live.length);
  `;
  const run = spawnSync(
    process.execPath,
    ['--expose-gc', '--trace-gc-verbose', '--import', 'tsx', '--input-type=module', '-e', script],
    { encoding: 'utf8', timeout: 20_000 },
  );
  expect(run.status, run.stderr).toBe(0);
  expect(run.stdout).toContain('kept 200000');
  const line = /\[HeapController\] Limit: old size: (\d+) KB, new limit: (\d+) KB(?: \((\d+\.\d)\))?$/gm;
  return [...run.stdout.matchAll(line)].map((m) => ({
    old: Number(m[1]),
    limit: Number(m[2]),
    factor: m[3] ?? null,
  }));
}

describe('tuneHeap', () => {
  it('fixes the factor each full collection grows the old generation by, set at run time', () => {
    const tuned = limitsSet(true);
    const own = limitsSet(false);
    expect(tuned.length).toBeGreaterThanOrEqual(2);
    expect(own.length).toBeGreaterThanOrEqual(2);
    const factor = (1 + HEAP_GROWING_PERCENT / 100).toFixed(1);
    for (const l of tuned) if (l.factor !== null) expect(l.factor).toBe(factor);
    for (const l of own) if (l.factor !== null) expect(l.factor).not.toBe(factor);
    // This program allocates fast, so V8's own factor is its largest (4): the room it leaves
    // above what is live is wider than the fixed factor's, on every Node that prints no factor too.
    const room = (ls: Limit[]) => ls.map((l) => l.limit - l.old);
    expect(Math.max(...room(tuned))).toBeLessThan(Math.min(...room(own)));
  });
});
