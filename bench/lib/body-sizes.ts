import { claudeCodeBody } from './claude-code-body';
import type { Target } from './phases';
import { serialRun } from './serial';
import { median, shuffled, sum } from './stats';

/** Body sizes of Claude Code's calls: a short one, and a session's middle, late and very late. */
export const BODY_SIZES_KB = [1, 150, 600, 2048] as const;

export interface SizeFigures {
  /** Every c=1 sample, ms. */
  samples: number[];
  errors: number;
  /** CPU of the arm's process (every thread) during its runs, and the calls it served then. */
  cpuMs: number;
  calls: number;
}

/**
 * Claude Code-shaped streaming calls (bench/lib/claude-code-body.ts) of each size through each
 * arm at concurrency 1. Each round visits every size, and every arm for it in a fresh order, so
 * the arms of one size are measured side by side on the same (shared, noisy) cores.
 */
export async function bodySizes(
  targets: Target[],
  o: { sizesKb: readonly number[]; rounds: number; seconds: number },
): Promise<Map<number, Map<string, SizeFigures>>> {
  const out = new Map<number, Map<string, SizeFigures>>();
  const bodies = new Map(o.sizesKb.map((kb) => [kb, claudeCodeBody(kb * 1024)]));
  for (const kb of o.sizesKb)
    out.set(kb, new Map(targets.map((t) => [t.name, { samples: [], errors: 0, cpuMs: 0, calls: 0 }])));
  for (let r = 0; r < o.rounds; r++) {
    for (const kb of o.sizesKb) {
      for (const t of shuffled(targets)) {
        const cpu0 = t.arm.cpuMs();
        const run = await serialRun(t.url, t.headers, bodies.get(kb)!, o.seconds);
        const fig = out.get(kb)!.get(t.name)!;
        fig.cpuMs += t.arm.cpuMs() - cpu0;
        fig.calls += run.samples.length;
        fig.errors += run.errors;
        for (const v of run.samples) fig.samples.push(v);
      }
    }
  }
  return out;
}

/**
 * One row per size: each proxy's added median (vs direct) and CPU per call, and the gateway's
 * ratios to the floor's (the target: within 1.2× at every size). `gateways` names the arms
 * compared with the floor (one, or a build before and after).
 */
export function renderBodySizes(
  figures: Map<number, Map<string, SizeFigures>>,
  columns: { name: string; title: string }[],
  gateways: string[],
): string[] {
  const proxies = columns.filter((c) => c.name !== 'direct');
  const lines = [
    `| body | direct p50 (ms) | ${proxies.map((c) => `${c.title}: added p50 (ms) / CPU per call (ms)`).join(' | ')} | ${gateways.map((g) => `${g} ÷ floor: added p50 / CPU`).join(' | ')} |`,
    `|---|---:|${proxies.map(() => '---:').join('|')}|${gateways.map(() => '---:').join('|')}|`,
  ];
  for (const [kb, arms] of figures) {
    const bytes = claudeCodeBody(kb * 1024).length;
    const direct = median(arms.get('direct')?.samples ?? []);
    const added = (n: string) => median(arms.get(n)?.samples ?? []) - direct;
    const cpu = (n: string) => {
      const f = arms.get(n);
      return f && f.calls > 0 ? f.cpuMs / f.calls : Number.NaN;
    };
    const cell = (n: string) =>
      arms.has(n) ? `${added(n).toFixed(3)} / ${cpu(n).toFixed(3)} (n=${arms.get(n)!.calls})` : '—';
    const ratio = (g: string) =>
      arms.has(g) && arms.has('floor')
        ? `${(added(g) / added('floor')).toFixed(2)}× / ${(cpu(g) / cpu('floor')).toFixed(2)}×`
        : '—';
    lines.push(
      `| ${kb >= 1024 ? `${kb / 1024} MB` : `${kb} KB`} (${bytes.toLocaleString('en')} B) | ${direct.toFixed(3)} | ${proxies.map((c) => cell(c.name)).join(' | ')} | ${gateways.map(ratio).join(' | ')} |`,
    );
  }
  const errors = sum([...figures.values()].flatMap((m) => [...m.values()].map((f) => f.errors)));
  lines.push(
    '',
    `Non-200 answers: **${errors}**. Added p50: the arm's median minus direct's, every sample of the interleaved c=1 rounds. CPU per call: the arm's process (all its threads; nginx: master and worker) over its runs, divided by the calls it served in them.`,
  );
  return lines;
}
