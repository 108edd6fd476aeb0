import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type BuildOptions, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const compiled = new Map<string, Promise<string>>();

/**
 * The arms run as built JavaScript under plain `node`, never through tsx. tsx keeps a loader
 * thread and its own isolate in every process it starts (34 MB of RSS at idle here, against 39 MB
 * for a bare `node`), and it loads the gateway as hundreds of separate modules. Each arm's script
 * is bundled into bench/.build/, with two rules:
 *
 * - `@keygate/gateway` is its compiled build (services/gateway/dist/cli/index.js, brought up to
 *   date first), so the gateway arm runs the code `keygate serve` runs. A checkout from before
 *   that entry existed (bench/before-after.ts's other arm) gets the same kind of build made here,
 *   in its services/gateway/.bench-build/ (at dist's depth, so paths the code takes from its own
 *   file, such as ../../migrations, hold).
 * - Every other npm package stays a package: imported from where it is installed, by absolute path,
 *   so the bundle can sit anywhere. The workspace's TypeScript packages and the bench's own files
 *   are bundled.
 */
export function compileArm(script: string): Promise<string> {
  const entry = resolve(ROOT, script);
  let out = compiled.get(entry);
  if (!out) compiled.set(entry, (out = bundle(entry)));
  return out;
}

async function bundle(entry: string): Promise<string> {
  const key = createHash('sha256').update(entry).digest('hex').slice(0, 8);
  const outfile = join(ROOT, 'bench/.build', `${basename(entry, '.ts')}-${key}.mjs`);
  mkdirSync(dirname(outfile), { recursive: true });
  await build({
    entryPoints: [entry],
    outfile,
    ...BUNDLE,
    sourcemap: 'linked',
  });
  return outfile;
}

const SKIP = Symbol('resolving');

/** One ES module for Node 20, npm packages left where they are installed. */
const BUNDLE: BuildOptions = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  plugins: [packagesWhereInstalled()],
};

function packagesWhereInstalled(): Plugin {
  return {
    name: 'packages-where-installed',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === SKIP) return undefined;
        if (args.path.startsWith('node:')) return { external: true };
        const found = await b.resolve(args.path, {
          resolveDir: args.resolveDir,
          kind: args.kind,
          pluginData: SKIP,
        });
        if (found.errors.length > 0) return { errors: found.errors };
        if (found.external) return { external: true };
        if (args.path === '@keygate/gateway')
          return { path: await builtGateway(dirname(dirname(found.path))), external: true };
        // Workspace packages resolve to their TypeScript sources (outside any node_modules).
        if (!found.path.includes('/node_modules/')) return { path: found.path };
        return { path: found.path, external: true };
      });
    },
  };
}

/** The gateway's compiled library entry in the checkout at `pkg`, built if stale (or built here when that checkout's build has none). */
async function builtGateway(pkg: string): Promise<string> {
  const script = join(pkg, 'scripts/build.mjs');
  if (existsSync(script)) {
    const { ensureBuilt } = (await import(pathToFileURL(script).href)) as {
      ensureBuilt?: () => Promise<void>;
    };
    await ensureBuilt?.();
  }
  const entry = join(pkg, 'dist/cli/index.js');
  if (existsSync(entry)) return entry;
  const out = join(pkg, '.bench-build');
  const worker = join(pkg, 'src/call-log/thread-worker.ts');
  await build({
    entryPoints: {
      'cli/index': join(pkg, 'src/index.ts'),
      ...(existsSync(worker) ? { 'call-log/thread-worker': worker } : {}),
    },
    outdir: out,
    ...BUNDLE,
    splitting: true,
  });
  const assets = join(pkg, 'src/dashboard/assets');
  if (existsSync(assets)) cpSync(assets, join(out, 'cli/assets'), { recursive: true });
  return join(out, 'cli/index.js');
}
