// `pnpm demo`: the offline tour, from the compiled build (built first when needed).
import { ensureBuilt } from './build.mjs';

await ensureBuilt();
await import('../dist/cli/demo.js');
