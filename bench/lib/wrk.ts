import { execFile, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./post.lua', import.meta.url));

export interface WrkRun {
  requests: number;
  rps: number;
  /** Connect, read, write and timeout errors, and answers other than 2xx/3xx. */
  errors: number;
}

/** wrk is a C load generator: it leaves the two cores to the servers. Installed from Debian when missing. */
export function ensureWrk(): string {
  try {
    return versionOf(execFileSync('wrk', ['--version'], { encoding: 'utf8' }));
  } catch (err) {
    const out = (err as { stdout?: string }).stdout ?? '';
    if (out.startsWith('wrk')) return versionOf(out);
  }
  console.log('installing wrk (apt-get install -y wrk)…');
  execFileSync('apt-get', ['install', '-y', '-q', 'wrk'], { stdio: 'inherit' });
  return ensureWrk();
}

// `wrk --version` prints "wrk debian/4.1.0-3+b2 [epoll] Copyright …" and exits 1.
const versionOf = (out: string) => out.split(' ').slice(0, 2).join(' ');

export interface WrkOptions {
  url: string;
  bodyFile: string;
  headers: Record<string, string>;
  connections: number;
  seconds: number;
}

export function runWrk(o: WrkOptions): Promise<WrkRun> {
  const args = ['-t1', `-c${o.connections}`, `-d${o.seconds}s`, '--timeout', '10s', '-s', SCRIPT, o.url];
  const env = {
    ...process.env,
    WRK_BODY: o.bodyFile,
    WRK_HEADERS: Object.entries(o.headers)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n'),
  };
  return new Promise((resolve, reject) => {
    execFile('wrk', args, { env, maxBuffer: 16 * 1024 * 1024 }, (err, stdout) => {
      if (err) return reject(err);
      const line = stdout.split('\n').find((l) => l.startsWith('BENCH_JSON '));
      if (!line) return reject(new Error(`wrk printed no summary:\n${stdout}`));
      const j = JSON.parse(line.slice('BENCH_JSON '.length));
      const errors = Object.values(j.errors as Record<string, number>).reduce((a, b) => a + b, 0);
      resolve({ requests: j.requests, rps: j.requests / (j.durationUs / 1e6), errors });
    });
  });
}
