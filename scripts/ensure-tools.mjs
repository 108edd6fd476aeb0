#!/usr/bin/env node
// Installs the real clients and runtimes the tests drive (Claude Code, Node 24, Bun, Deno)
// from npm into the project's git-ignored .cache/tools, once; never globally. Idempotent:
// a tool whose pinned version is already there is left alone. Prints the paths as JSON
// with --json. Used by .ci/run and by the integration tests' global setup.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const TOOLS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '.cache', 'tools');

/** name → npm spec and the binary inside its node_modules. */
export const TOOLS = {
  claude: {
    spec: '@anthropic-ai/claude-code@2.1.330',
    bin: 'node_modules/@anthropic-ai/claude-code/bin/claude.exe',
  },
  node24: { spec: 'node@24.9.0', bin: 'node_modules/node/bin/node' },
  bun: { spec: 'bun@1.4.5', bin: 'node_modules/bun/bin/bun.exe' },
  deno: { spec: 'deno@2.9.6', bin: 'node_modules/deno/deno' },
};

function install(name) {
  const tool = TOOLS[name];
  const dir = join(TOOLS_DIR, name);
  const marker = join(dir, '.installed');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === tool.spec && existsSync(join(dir, tool.bin)))
    return join(dir, tool.bin);
  // Install beside, then move into place, so an interrupted install is never taken as done.
  const staging = `${dir}.staging-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  writeFileSync(join(staging, 'package.json'), '{"private":true}\n');
  execFileSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--loglevel=error', '--prefix', staging, tool.spec],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  if (!existsSync(join(staging, tool.bin))) throw new Error(`${tool.spec} installed without ${tool.bin}`);
  writeFileSync(join(staging, '.installed'), tool.spec);
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  return join(dir, tool.bin);
}

/** Debian packages the tests drive (the dashboard's browser, the load balancer), by binary. */
export const SYSTEM_PACKAGES = { '/usr/bin/chromium': 'chromium', '/usr/sbin/haproxy': 'haproxy' };

/** Installs the missing Debian packages with apt-get (as root); says which command to run otherwise. */
export function ensureSystemPackages() {
  const missing = Object.entries(SYSTEM_PACKAGES)
    .filter(([bin]) => !existsSync(bin))
    .map(([, pkg]) => pkg);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0)
    throw new Error(
      `the tests need Debian's ${missing.join(' and ')}: run \`sudo apt-get install -y ${missing.join(' ')}\``,
    );
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
  execFileSync('apt-get', ['install', '-y', '-qq', ...missing], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env,
  });
}

/** The provider's Python SDK in a virtual environment of its own; returns its python. */
export const PYTHON_ANTHROPIC = 'anthropic==1.13.0';
export function ensurePythonAnthropic() {
  const dir = join(TOOLS_DIR, 'python-anthropic');
  const python = join(dir, 'bin', 'python');
  const marker = join(dir, '.installed');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === PYTHON_ANTHROPIC && existsSync(python))
    return python;
  rmSync(dir, { recursive: true, force: true });
  execFileSync('python3', ['-m', 'venv', '--system-site-packages', dir], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  execFileSync(join(dir, 'bin', 'pip'), ['install', '--quiet', '--retries', '0', PYTHON_ANTHROPIC], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  writeFileSync(marker, PYTHON_ANTHROPIC);
  return python;
}

/** Installs what is missing and returns every tool's binary path. */
export function ensureTools(names = Object.keys(TOOLS)) {
  const paths = {};
  for (const name of names) paths[name] = install(name);
  return paths;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  ensureSystemPackages();
  const paths = ensureTools(
    process.argv.slice(2).filter((a) => !a.startsWith('--')).length
      ? process.argv.slice(2).filter((a) => !a.startsWith('--'))
      : undefined,
  );
  if (process.argv.includes('--json')) console.log(JSON.stringify(paths));
  else for (const [name, path] of Object.entries(paths)) console.log(`${name}: ${path}`);
}
