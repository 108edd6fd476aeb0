import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const compiled = new Map<string, Promise<string>>();

/**
 * The arms run as built JavaScript under plain `node`, never through tsx. tsx keeps a loader
 * thread and its own isolate in every process it starts (34 MB of RSS at idle here, against 39 MB
 * for a bare `node`), and it loads the gateway as hundreds of separate modules. Each arm's script
 * is bundled into bench/.build/, with three rules:
 *
 * - `@keygate/gateway` is its compiled build (services/gateway/dist/cli/index.js, brought up to
 *   date first), so the gateway arm runs the code `keygate serve` runs. A checkout whose build has
 *   no such entry (bench/before-after.ts's other arm, from before it existed) is bundled from its
 *   sources, as are files an arm imports from the gateway's sources directly (servers/pg-load.ts).
 * - In a bundled TypeScript file, `import.meta.url` stays that file's own address, so paths the
 *   code takes from it (../../migrations, the dashboard's assets) hold in the bundle.
 * - Every other npm package stays a package: imported from where it is installed, by absolute
 *   path, so the bundle can sit anywhere.
 */
export function compileArm(script: string): Promise<string> {
  const entry = resolve(ROOT, script);
  let out = compiled.get(entry);
  if (!out) compiled.set(entry, (out = oneAtATime(() => bundle(entry))));
  return out;
}

// Bundles run one at a time: a gateway build (builtGateway) stops esbuild's service, the one
// every bundle in this process shares, and arms are compiled concurrently.
let queue: Promise<unknown> = Promise.resolve();
function oneAtATime<T>(work: () => Promise<T>): Promise<T> {
  const done = queue.then(work, work);
  queue = done.catch(() => {});
  return done;
}

async function bundle(entry: string): Promise<string> {
  const key = createHash('sha256').update(entry).digest('hex').slice(0, 8);
  const outfile = join(ROOT, 'bench/.build', `${basename(entry, '.ts')}-${key}.mjs`);
  mkdirSync(dirname(outfile), { recursive: true });
  // The entry's checkout's gateway is built before the bundle, not from inside it: its build stops
  // esbuild's service when done, which failed this bundle midway when a stale build ran in it.
  const checkout = workspaceOf(entry);
  if (checkout) await builtGateway(join(checkout, 'services/gateway'));
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    logLevel: 'warning',
    plugins: [packagesWhereInstalled()],
  });
  return outfile;
}

const SKIP = Symbol('resolving');

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
        if (args.path === '@keygate/gateway') {
          const built = await builtGateway(dirname(dirname(found.path)));
          if (built) return { path: built, external: true };
        }
        // Workspace packages resolve to their TypeScript sources (outside any node_modules).
        if (!found.path.includes('/node_modules/')) return { path: found.path };
        return { path: found.path, external: true };
      });
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        if (args.path.includes('/node_modules/')) return undefined;
        const source = readFileSync(args.path, 'utf8');
        const here = JSON.stringify(pathToFileURL(args.path).href);
        return { contents: source.replaceAll('import.meta.url', here), loader: 'ts' };
      });
    },
  };
}

/** The workspace (pnpm-workspace.yaml) a file is in, or null. */
function workspaceOf(file: string): string | null {
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir))
    if (existsSync(join(dir, 'pnpm-workspace.yaml'))) return dir;
  return null;
}

/** The gateway's compiled library entry in the checkout at `pkg`, built if stale; null when its build has none. */
async function builtGateway(pkg: string): Promise<string | null> {
  const script = join(pkg, 'scripts/build.mjs');
  if (!existsSync(script)) return null;
  const { ensureBuilt } = (await import(pathToFileURL(script).href)) as {
    ensureBuilt?: () => Promise<void>;
  };
  await ensureBuilt?.();
  const entry = join(pkg, 'dist/cli/index.js');
  return existsSync(entry) ? entry : null;
}
