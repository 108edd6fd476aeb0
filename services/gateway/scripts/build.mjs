// The gateway's compiled build: one esbuild pass into dist/, so plain `node` runs it.
//
// The rule: the workspace's own packages (@keygate/*, TypeScript source) are bundled; every
// npm package stays external, and Node resolves it at run time from services/gateway, so each
// one must be a dependency of @keygate/gateway (the build fails on one that is not, or that
// Node could not find from dist/). The one exception, for start time, is BUNDLED: packages
// every start loads through static imports, where one file loads faster than hundreds of
// modules; a dynamic import of one fails the build, since esbuild's interop for a CommonJS
// module behind import() in another chunk yields only `default`.
// Commands and settings that need code import it dynamically, so it is loaded only then.
// `node scripts/build.mjs` builds; `ensureBuilt()` builds only when dist is missing or older
// than a source file.
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
// Entries and chunks keep src/'s depth (dist/cli/*.js) so paths relative to the code, such as
// ../../migrations, hold in the build too.
const ENTRIES = {
  'cli/keygate': 'src/cli/keygate.ts',
  'cli/demo': 'src/cli/demo.ts',
  // The call log's thread (src/call-log/thread.ts): a worker's code is a file of its own.
  'call-log/thread-worker': 'src/call-log/thread-worker.ts',
  // The package's library API (src/index.ts) as built code, beside the chunks it shares with the
  // CLI: the bench runs the gateway from it, so it measures the code that ships.
  'cli/index': 'src/index.ts',
};
export const ENTRY = join(DIST, 'cli/keygate.js');
// Measured on an existing data dir: start CPU 0.55–0.69 s external, 0.47–0.53 s bundled; RSS 83 → 75 MB.
// With pdf-lib and pako external too (this rule), start CPU to listening 0.37–0.39 s, as before it; RSS 79–82 MB.
const BUNDLED = new Set(['undici', 'zod', 'hono', '@hono/node-server', 'postgres']);
// Bundled CommonJS (undici) calls require(), which an ES module has only when given one.
const REQUIRE =
  "import { createRequire as __keygateRequire } from 'node:module'; const require = __keygateRequire(import.meta.url);";

function manifest(dir) {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
}

/** The workspace packages the gateway imports (and theirs), as folders. */
function workspacePackages(dir = ROOT, seen = new Map()) {
  const pkg = manifest(dir);
  for (const [name, range] of Object.entries({ ...pkg.dependencies, ...pkg.devDependencies })) {
    if (!String(range).startsWith('workspace:') || seen.has(name)) continue;
    const at = realpathSync(join(dir, 'node_modules', name));
    seen.set(name, at);
    workspacePackages(at, seen);
  }
  return seen;
}

function newest(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = st.mtimeMs;
  for (const entry of readdirSync(path))
    if (entry !== 'node_modules' && entry !== 'dist') max = Math.max(max, newest(join(path, entry)));
  return max;
}

export function isStale() {
  if (!existsSync(ENTRY)) return true;
  const built = statSync(ENTRY).mtimeMs;
  const sources = [
    join(ROOT, 'src'),
    join(ROOT, 'package.json'),
    join(ROOT, 'scripts/build.mjs'),
    join(ROOT, '../../README.md'),
    join(ROOT, '../../docs'),
    ...[...workspacePackages().values()].flatMap((d) => [join(d, 'src'), join(d, 'package.json')]),
  ];
  return sources.some((s) => existsSync(s) && newest(s) > built);
}

/** Builds into `dist` (the package's dist/ unless told: a test builds elsewhere). */
export async function build(dist = DIST) {
  const { build: esbuild, stop } = await import('esbuild');
  const workspace = workspacePackages();
  // Written beside dist and swapped in whole, so a process starting meanwhile never reads half a build.
  const out = `${dist}.tmp-${process.pid}`;
  rmSync(out, { recursive: true, force: true });
  // esbuild's API runs a child (`esbuild --service`) that lives until stop(): built from
  // `keygate serve`, it stayed beside the gateway for its whole life (143 MB at start).
  try {
    await compile(esbuild, workspace, out);
  } finally {
    await stop();
  }
  // Files the code reads beside itself (new URL('./assets/…', import.meta.url)); every chunk sits in dist/cli.
  cpSync(join(ROOT, 'src/dashboard/assets'), join(out, 'cli/assets'), { recursive: true });
  // The guides the dashboard shows (src/dashboard/guides.ts): README.md and docs/, as in the repository.
  cpSync(join(ROOT, '../../README.md'), join(out, 'cli/guides/README.md'));
  cpSync(join(ROOT, '../../docs'), join(out, 'cli/guides/docs'), { recursive: true });
  rmSync(dist, { recursive: true, force: true });
  try {
    renameSync(out, dist);
  } catch (err) {
    // Another build of the same sources swapped its own in first (parallel test runs): keep that one.
    rmSync(out, { recursive: true, force: true });
    if (!existsSync(dist)) throw err;
  }
}

function compile(esbuild, workspace, out) {
  return esbuild({
    absWorkingDir: ROOT,
    entryPoints: ENTRIES,
    outdir: out,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    plugins: [npmPackages(workspace)],
    chunkNames: 'cli/[name]-[hash]',
    logLevel: 'warning',
    banner: { js: REQUIRE },
  });
}

/** The package name of a bare import specifier (`hono/cookie` → hono, `@hono/node-server/x` → @hono/node-server). */
function packageName(spec) {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Applies the rule at the top of this file to every import of an npm package. */
function npmPackages(workspace) {
  const deps = new Set(Object.keys(manifest(ROOT).dependencies ?? {}));
  const builtins = new Set(builtinModules);
  return {
    name: 'npm-packages',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        if (args.path.startsWith('node:') || builtins.has(args.path)) return { external: true };
        const name = packageName(args.path);
        if (workspace.has(name)) return undefined;
        const where = `${args.path} (imported by ${relative(ROOT, args.importer)})`;
        if (!deps.has(name))
          return { errors: [{ text: `${where}: add ${name} to the dependencies of @keygate/gateway` }] };
        if (BUNDLED.has(name)) {
          if (args.kind === 'dynamic-import')
            return { errors: [{ text: `${where}: a bundled package must be imported statically` }] };
          return undefined;
        }
        // Where Node looks first from dist/cli: a package missing there is missing at run time.
        if (!existsSync(join(ROOT, 'node_modules', name, 'package.json')))
          return {
            errors: [{ text: `${where}: ${name} is not installed in services/gateway; run pnpm install` }],
          };
        return { external: true };
      });
    },
  };
}

/** Builds when needed; several processes asking at once build once. */
export async function ensureBuilt() {
  if (!isStale()) return;
  const lock = join(ROOT, '.build.lock');
  for (let waited = 0; ; waited += 50) {
    try {
      mkdirSync(dirname(lock), { recursive: true });
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch {
      if (waited > 60_000) rmSync(lock, { force: true });
      await new Promise((r) => setTimeout(r, 50));
      if (!isStale()) return;
    }
  }
  try {
    if (isStale()) await build();
  } finally {
    rmSync(lock, { force: true });
  }
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const t0 = performance.now();
  await build();
  process.stdout.write(`built ${DIST} in ${Math.round(performance.now() - t0)} ms\n`);
}
