/**
 * Layers point down. A room is a folder directly under `src/` or a file at its top; each room may
 * import only from rooms below it in LAYERS (and from itself). Top to bottom:
 *
 *   cli                        the `keygate` command
 *   index, server, runtime     the composition root: wires config, store, call log, app
 *   fan-out                    where a finished call goes: call log, budgets, metrics, alerts
 *   config-docs, app           `createApp(deps)` and the generated configuration reference
 *   dashboard, operator        pages and routes that reuse the account API's pieces
 *   federation                 workload tokens from an issuer's JWT: its routes on the account API and /v1/oauth/token
 *   account-api, identity-api, api-docs, health, metrics
 *   claude-gateway             Claude Code's `/login` to a gateway: discovery, OAuth, managed settings
 *   otlp                       Claude Code's OpenTelemetry export, received and relayed
 *   surface                    the provider's other endpoints: passthrough, files, batches
 *   pipeline                   the one request-body reader, with each route family's bounds
 *   proxy                      the call path; gets callbacks, never the store's writers
 *   streams                    events kept for resumable streams (Redis Streams or memory)
 *   admission, limits          who may call
 *   billing, alerts, budgets   plans and standing; alert events; budgets and spend counters
 *   identity                   sign-in through an account's OIDC provider; member tokens
 *   accounts, reports          account rules; usage, cost and summaries
 *   pricing                    list prices of the provider's tokens
 *   app-env                    the typed Hono environment, composed from middleware variables
 *   call-log, auth             the call log's writer; key format, resolver, middleware
 *   store                      the only room that speaks SQL
 *   config, usage, lib         parsed environment; the provider's token counts; helpers
 *
 * Rooms on one line are still ordered left to right. A new folder fails here until it is
 * given its place, so the order stays written down.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

export const LAYERS = [
  'cli',
  'index',
  'server',
  'runtime',
  'fan-out',
  'config-docs',
  'app',
  'dashboard',
  'operator',
  'federation',
  'account-api',
  'identity-api',
  'api-docs',
  'health',
  'metrics',
  'claude-gateway',
  'otlp',
  'upstreams',
  'surface',
  'pipeline',
  'proxy',
  'streams',
  'admission',
  'limits',
  'billing',
  'alerts',
  'budgets',
  'identity',
  'accounts',
  'reports',
  'pricing',
  'app-env',
  'call-log',
  'auth',
  'store',
  'config',
  'usage',
  'lib',
] as const;

const SRC = dirname(new URL(import.meta.url).pathname);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.tsx?$/.test(name) && !path.endsWith('/layers.test.ts') ? [path] : [];
  });
}

/** `account-api/serialize.ts` → `account-api`; `app-env.ts` → `app-env`; `config.test.ts` → `config`. */
function roomOf(path: string): string {
  const [first = '', ...rest] = relative(SRC, path).split('/');
  return rest.length > 0 ? first : (first.split('.')[0] ?? first);
}

interface Edge {
  file: string;
  specifier: string;
  from: string;
  to: string;
}

function edges(): Edge[] {
  return sources(SRC).flatMap((file) =>
    ts
      .preProcessFile(readFileSync(file, 'utf8'), true, true)
      .importedFiles.filter((i) => i.fileName.startsWith('.'))
      .map((i) => ({
        file: relative(SRC, file),
        specifier: i.fileName,
        from: roomOf(file),
        to: roomOf(resolve(dirname(file), i.fileName)),
      })),
  );
}

const rank = (room: string) => LAYERS.indexOf(room as (typeof LAYERS)[number]);

describe('the layer order', () => {
  const all = edges();

  it('reads the imports of every source file', () => {
    // A parser that found nothing would pass every check below.
    expect(all.length).toBeGreaterThan(500);
    expect(all).toContainEqual(expect.objectContaining({ file: 'app.ts', from: 'app', to: 'proxy' }));
  });

  it('gives every room of src/ a place', () => {
    const rooms = new Set(sources(SRC).map(roomOf));
    expect([...rooms].filter((r) => rank(r) < 0)).toEqual([]);
  });

  it('has no import that climbs to a room above its own', () => {
    const climbing = all
      .filter((e) => e.from !== e.to && !e.to.startsWith('..') && rank(e.to) < rank(e.from))
      .map((e) => `${e.file} imports ${e.specifier} (${e.from} → ${e.to})`);
    expect(climbing).toEqual([]);
  });

  it('stays inside src/ (unit tests may use the test kit)', () => {
    const kit = (e: Edge) => e.file.endsWith('.test.ts') && /^(\.\.\/)+test\/kit\//.test(e.specifier);
    const outside = all
      .filter((e) => e.to.startsWith('..') && !kit(e))
      .map((e) => `${e.file} → ${e.specifier}`);
    expect(outside).toEqual([]);
  });
});
