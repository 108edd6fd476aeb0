#!/usr/bin/env node
// Runs the compiled build. Inside the workspace it (re)builds first when the build is missing
// or older than the sources; an installed copy without a build says how to make one.
import { existsSync } from 'node:fs';
import module from 'node:module';

// Node 22 and later keep the compiled code of the build between runs (not in Node 20).
module.enableCompileCache?.();

const here = new URL('../', import.meta.url);
if (existsSync(new URL('scripts/build.mjs', here)) && existsSync(new URL('src/', here))) {
  await (await import('../scripts/build.mjs')).ensureBuilt();
}
if (!existsSync(new URL('dist/cli/keygate.js', here))) {
  process.stderr.write('keygate: not built yet; run `pnpm build` in the Keygate repository.\n');
  process.exit(1);
}
await import('../dist/cli/keygate.js');
