import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export interface Asset {
  body: string;
  type: string;
}

/** Files served from our own origin: Charts.css from its npm package, our stylesheet and icon. */
export function loadAssets(): Map<string, Asset> {
  const css = 'text/css; charset=utf-8';
  return new Map([
    [
      'charts.css',
      { body: readFileSync(require.resolve('charts.css/dist/charts.min.css'), 'utf8'), type: css },
    ],
    [
      'dashboard.css',
      { body: readFileSync(new URL('./assets/dashboard.css', import.meta.url), 'utf8'), type: css },
    ],
    [
      'favicon.svg',
      { body: readFileSync(new URL('./assets/favicon.svg', import.meta.url), 'utf8'), type: 'image/svg+xml' },
    ],
  ]);
}
