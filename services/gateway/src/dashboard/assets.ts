import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** Stylesheets served from our own origin: Charts.css from its npm package, and ours. */
export function loadAssets(): Map<string, string> {
  return new Map([
    ['charts.css', readFileSync(require.resolve('charts.css/dist/charts.min.css'), 'utf8')],
    ['dashboard.css', readFileSync(new URL('./assets/dashboard.css', import.meta.url), 'utf8')],
  ]);
}
