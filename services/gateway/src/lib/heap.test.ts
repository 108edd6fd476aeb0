import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT } from './heap';

/**
 * A child node process with V8's own trace of each new old-generation limit: the factor it
 * printed is the one the next collection grows by.
 */
function limitFactors(tune: boolean): string[] {
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
  return [...run.stdout.matchAll(/\[HeapController\] Limit: .*\((\d+\.\d)\)$/gm)].map((m) => m[1]!);
}

describe('tuneHeap', () => {
  it('fixes the factor each full collection grows the old generation by, set at run time', () => {
    const tuned = limitFactors(true);
    expect(tuned.length).toBeGreaterThanOrEqual(2);
    expect(new Set(tuned)).toEqual(new Set([(1 + HEAP_GROWING_PERCENT / 100).toFixed(1)]));
  });

  it("leaves V8's own factor without it (here, for a process that allocates fast: 4.0)", () => {
    const own = limitFactors(false);
    expect(own.length).toBeGreaterThanOrEqual(2);
    expect(own).not.toContain((1 + HEAP_GROWING_PERCENT / 100).toFixed(1));
  });
});
