import { readdirSync, readFileSync } from 'node:fs';

export interface Proc {
  pid: number;
  ppid: number;
  name: string;
  rssMb: number;
  /** CPU seconds, its own and its waited-for children's. */
  cpuS: number;
}

function readProc(pid: number): Proc | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const name = stat.slice(stat.indexOf('(') + 1, close);
    const fields = stat.slice(close + 2).split(' ');
    const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    const ticks = [11, 12, 13, 14].reduce((s, i) => s + Number(fields[i]), 0);
    return { pid, ppid: Number(fields[1]), name, rssMb: rss ? Number(rss[1]) / 1024 : 0, cpuS: ticks / 100 };
  } catch {
    return null;
  }
}

/** A process and all its descendants, from /proc. */
export function processTree(root: number): Proc[] {
  const all = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => readProc(Number(d)))
    .filter((p): p is Proc => p !== null);
  const out: Proc[] = [];
  const queue = [root];
  while (queue.length) {
    const pid = queue.shift()!;
    const p = all.find((x) => x.pid === pid);
    if (!p) continue;
    out.push(p);
    for (const c of all) if (c.ppid === pid) queue.push(c.pid);
  }
  return out;
}

/** The gateway's own process: the largest node process in the tree (wrappers such as pnpm and tsx are smaller). */
export function gatewayProcess(root: number): Proc | null {
  const nodes = processTree(root).filter((p) => p.name.startsWith('node') || p.name.startsWith('MainThread'));
  return nodes.sort((a, b) => b.rssMb - a.rssMb)[0] ?? null;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
