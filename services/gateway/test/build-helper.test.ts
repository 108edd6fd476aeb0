import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';

const BUILD = fileURLToPath(new URL('../scripts/build.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'kg-build-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Builds as `keygate serve` does on a stale build, then names the builder's own child processes
// (from /proc): esbuild's `--service` child outlived the build and stayed for the gateway's life.
const SCRIPT = `
import { readdirSync, readFileSync } from 'node:fs';
const { build } = await import(process.env.KG_BUILD_SCRIPT);
await build(process.env.KG_BUILD_DIST);
const children = [];
for (const pid of readdirSync('/proc').filter((p) => /^\\d+$/.test(p))) {
  try {
    const stat = readFileSync('/proc/' + pid + '/stat', 'utf8');
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // A child that has exited and waits only to be reaped (Z) is gone. So is one still exiting:
    // esbuild's stop() signals its child without waiting, and a child past the point where its
    // memory is released shows an empty command line before it turns Z (seen on a slow VM).
    if (Number(ppid) !== process.pid || state === 'Z') continue;
    const cmdline = readFileSync('/proc/' + pid + '/cmdline', 'utf8').replaceAll('\\0', ' ').trim();
    if (cmdline !== '') children.push(cmdline);
  } catch {}
}
process.stdout.write(JSON.stringify(children));
`;

it('no build helper outlives the build: the builder has no child process once the build is done', async () => {
  const dist = join(dir, 'dist');
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      ['--input-type=module', '-e', SCRIPT],
      { timeout: 120_000, env: { ...process.env, KG_BUILD_SCRIPT: BUILD, KG_BUILD_DIST: dist } },
      (err, out, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(out)),
    ),
  );
  expect(existsSync(join(dist, 'cli/keygate.js'))).toBe(true);
  expect(JSON.parse(stdout)).toEqual([]);
}, 150_000);
