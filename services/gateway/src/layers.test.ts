/**
 * Layers point down. A room is a folder directly under `src/` or a file at its top; each room may
 * import only from rooms below it in LAYERS (and from itself). Top to bottom:
 *
 *   cli                        the `keygate` command
 *   index, server, runtime     the composition root: opens the kernel, installs each capability, listens
 *   stores                     every room's queries composed on one database (the runtime's and the test kit's)
 *   config-docs, app           `createApp(deps)` and the generated configuration reference
 *   dashboard, operator        pages and routes that reuse the account API's pieces
 *   federation                 workload tokens from an issuer's JWT: its routes on the account API and /v1/oauth/token
 *   account-api, identity-api, api-docs, health
 *   claude-gateway             Claude Code's `/login` to a gateway: discovery, OAuth, managed settings
 *   otlp                       Claude Code's OpenTelemetry export, received and relayed
 *   cloud-fronts               Bedrock InvokeModel and Vertex rawPredict in front of the messages pipeline
 *   surface                    the provider's other endpoints: passthrough, files, batches
 *   billing                    plans, subscriptions, invoices, Stripe, reconciliation
 *   kernel                     the typed service object every capability is installed on
 *   fan-out                    where a finished call goes: call log, budgets, metrics, alerts
 *   metrics                    Prometheus metrics and access lines
 *   proxy                      the call path; gets callbacks, never the store's writers
 *   streams                    events kept for resumable streams (Redis Streams or memory)
 *   pipeline                   the one request-body reader, with each route family's bounds
 *   admission, limits          who may call
 *   alerts, budgets            alert events; budgets and spend counters
 *   identity                   sign-in through an account's OIDC provider; member tokens
 *   accounts, reports          account rules; usage, cost and summaries
 *   pricing                    list prices of the provider's tokens
 *   app-env                    the typed Hono environment, composed from middleware variables
 *   call-log, auth             the call log's writer; key format, resolver, middleware
 *   tenancy                    accounts, members and keys as rows, with their audit: what every room stands on
 *   store                      the database: connections, migrations, pagination (each room keeps its own SQL)
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
  'stores',
  'config-docs',
  'app',
  'dashboard',
  'operator',
  'federation',
  'account-api',
  'identity-api',
  'api-docs',
  'health',
  'claude-gateway',
  'otlp',
  'cloud-fronts',
  'surface',
  'upstreams',
  'billing',
  'kernel',
  'fan-out',
  'metrics',
  'proxy',
  'streams',
  'pipeline',
  'admission',
  'limits',
  'alerts',
  'budgets',
  'identity',
  'accounts',
  'reports',
  'pricing',
  'app-env',
  'call-log',
  'auth',
  'tenancy',
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

/**
 * The capabilities, each a set of rooms. A capability imports its own rooms and the kernel's
 * (below), never another capability's: they meet only through the kernel and the composition
 * root. Every room is a capability's, the kernel's, or the root's.
 */
export const CAPABILITIES = {
  messages: ['cloud-fronts', 'surface', 'upstreams', 'proxy', 'streams'],
  identity: ['identity', 'identity-api', 'federation', 'claude-gateway'],
  organization: ['account-api', 'operator'],
  telemetry: ['otlp'],
  billing: ['billing'],
  dashboard: ['dashboard'],
} as const;

/** The composition root: it alone joins capabilities (and the reference generated from them). */
export const ROOT = ['cli', 'index', 'server', 'runtime', 'stores', 'config-docs', 'app'] as const;

/** The kernel: the shared services (kernel/ builds the service object) and what they stand on. */
export const KERNEL = LAYERS.filter(
  (room) =>
    !(ROOT as readonly string[]).includes(room) &&
    !Object.values(CAPABILITIES).some((rooms) => (rooms as readonly string[]).includes(room)),
);

/**
 * Crossings between capabilities that are still to be undone, file by file: a route of one
 * capability mounted under another's API (billing's and identity's account-API routes), and the
 * dashboard's pages over billing and identity. The list may only shrink: a crossing not listed
 * fails, and so does a listed one that no longer exists.
 */
const CROSSINGS_TO_UNDO = [
  'account-api/account-routes.ts → billing',
  'account-api/billing-routes.ts → billing',
  'account-api/identity-routes.ts → identity',
  'account-api/otlp-relay-routes.ts → telemetry',
  'account-api/reconcile-routes.ts → billing',
  'account-api/routes.ts → billing',
  'account-api/routes.ts → identity',
  'account-api/serialize.ts → billing',
  'account-api/stripe-webhook-routes.ts → billing',
  'dashboard/billing-routes.tsx → billing',
  'dashboard/budget-routes.tsx → organization',
  'dashboard/calls-table.test.ts → messages',
  'dashboard/components/billing-banner.tsx → billing',
  'dashboard/components/billing-forms.tsx → billing',
  'dashboard/env.ts → billing',
  'dashboard/env.ts → identity',
  'dashboard/idp-settings.tsx → identity',
  'dashboard/idp-settings.tsx → organization',
  'dashboard/idp-sign-in.tsx → identity',
  'dashboard/pages/billing.tsx → billing',
  'dashboard/pages/operator-billing.tsx → billing',
  'dashboard/pages/reconciliation.tsx → billing',
  'dashboard/reconcile-routes.tsx → billing',
  'dashboard/routes.tsx → billing',
  'dashboard/spend-limit-routes.tsx → organization',
  'federation/admin-routes.ts → organization',
  'federation/schemas.ts → organization',
  'operator/billing-routes.ts → billing',
  'operator/routes.ts → billing',
  'operator/routes.ts → identity',
];

const capabilityOf = (room: string) =>
  Object.entries(CAPABILITIES).find(([, rooms]) => (rooms as readonly string[]).includes(room))?.[0] ?? null;

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

  it('places every room once: in the root, the kernel or one capability', () => {
    const named = [...ROOT, ...KERNEL, ...Object.values(CAPABILITIES).flat()];
    expect(named.filter((room, i) => named.indexOf(room) !== i)).toEqual([]);
    expect([...named].sort()).toEqual([...LAYERS].sort());
    expect(KERNEL).toContain('kernel');
  });

  it('keeps the kernel free of capabilities and of the root', () => {
    const kernel = KERNEL as readonly string[];
    const upward = all
      .filter((e) => kernel.includes(e.from) && !e.to.startsWith('..') && !kernel.includes(e.to))
      .map((e) => `${e.file} imports ${e.specifier} (${e.from} → ${e.to})`);
    expect(upward).toEqual([]);
  });

  it('lets capabilities meet only through the kernel', () => {
    const crossings = new Set<string>();
    for (const e of all) {
      const from = capabilityOf(e.from);
      const to = capabilityOf(e.to);
      if (from && to && from !== to) crossings.add(`${e.file} → ${to}`);
    }
    expect([...crossings].sort()).toEqual([...CROSSINGS_TO_UNDO].sort());
  });
});

/** The database room: connections, migrations, backups and pagination. Each room's queries live in that room. */
const STORE_FILES = [
  'backup-file.test.ts',
  'backup-file.ts',
  'backup.ts',
  'database-watch.test.ts',
  'database-watch.ts',
  'database.test.ts',
  'database.ts',
  'embedded-postgres.ts',
  'index.ts',
  'invalidations.ts',
  'legacy-pglite.ts',
  'migrate.ts',
  'pagination.ts',
  'postgres-user.ts',
  'restore.ts',
];

/** A query module: `queries.ts` or `…-queries.ts`, in the room that owns its tables. */
const isQueryModule = (file: string) => /(^|[-/])queries\.ts$/.test(file);

/** The SQL a file speaks: tagged templates on the driver (`sql`, a transaction's `t`/`tx`, `probe`) and imports of `postgres`. */
function sqlIn(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  // Parse only what may hold SQL: parsing every file would take seconds.
  if (!/\b(sql|t|tx|probe)(<[^`]*?>)?`|['"]postgres['"]/.test(text)) return [];
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TSX);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isTaggedTemplateExpression(node)) {
      const tag = node.tag.getText(source).split('.').pop() ?? '';
      if (['sql', 't', 'tx', 'probe'].includes(tag)) found.push(`${node.tag.getText(source)}\`…\``);
    }
    const module =
      ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)
        ? node.moduleSpecifier.text
        : ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword
          ? node.arguments[0]?.getText(source).slice(1, -1)
          : undefined;
    if (module === 'postgres') found.push("import of 'postgres'");
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('where SQL lives', () => {
  const files = sources(SRC).map((file) => ({ file, rel: relative(SRC, file) }));

  it('reads SQL where it is', () => {
    // A detector that found nothing would pass the check below.
    expect(sqlIn(join(SRC, 'tenancy/key-queries.ts'))).toContain('sql`…`');
    expect(sqlIn(join(SRC, 'store/database.ts'))).toContain("import of 'postgres'");
  });

  it('speaks SQL only in store/ and the query modules', () => {
    const speaking = files
      .filter(({ rel }) => !rel.startsWith('store/') && !isQueryModule(rel))
      .flatMap(({ file, rel }) => sqlIn(file).map((what) => `${rel}: ${what}`));
    expect(speaking).toEqual([]);
  });

  it('keeps store/ to the database: no query module there', () => {
    expect(readdirSync(join(SRC, 'store')).sort()).toEqual(STORE_FILES);
  });
});

/**
 * Where the kernel's store may be read: the kernel itself, the composition root's store and
 * health wiring, and the installs listed here, which read it field by field until they move to
 * `kernel.db` and `kernel.tenancy`. Every other capability gets its queries from its own install,
 * and its routes get that object, never the kernel's store. The list may only shrink.
 */
const STORE_READERS = ['kernel/', 'stores.ts', 'server.ts'];
const STORE_READERS_TO_UNDO: string[] = [];

/** The kernel's store in a source: `kernel.store` (`deps.kernel.store`), or a `store` destructured from a kernel; `whole` when handed on as it is. */
export function kernelStoreUses(file: string, text: string): { at: string; whole: boolean }[] {
  if (!/\bstore\b/.test(text) || !/\bkernel\b|\bKernel\b/.test(text)) return [];
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TSX);
  const isKernel = (node: ts.Node) =>
    (ts.isIdentifier(node) && node.text === 'kernel') ||
    (ts.isPropertyAccessExpression(node) && node.name.text === 'kernel');
  // Names bound to the kernel's store: `const { store } = kernel`, `({ store }: Kernel) => …`.
  const names = new Set<string>();
  const bindings = new Set<ts.Node>();
  const found: { at: string; whole: boolean }[] = [];
  const note = (node: ts.Expression) => {
    const parent = node.parent;
    const fieldRead = ts.isPropertyAccessExpression(parent) && parent.expression === node;
    const destructured =
      ts.isVariableDeclaration(parent) &&
      parent.initializer === node &&
      ts.isObjectBindingPattern(parent.name);
    const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
    found.push({
      at: `${file}:${line + 1}: ${parent.getText(source).split('\n')[0]}`,
      whole: !fieldRead && !destructured,
    });
  };
  const collect = (node: ts.Node) => {
    if (ts.isObjectBindingPattern(node)) {
      const holder = node.parent;
      const fromKernel =
        (ts.isVariableDeclaration(holder) &&
          holder.initializer !== undefined &&
          isKernel(holder.initializer)) ||
        (ts.isParameter(holder) &&
          holder.type !== undefined &&
          /\bKernel\b/.test(holder.type.getText(source)));
      for (const element of node.elements)
        if (fromKernel && (element.propertyName ?? element.name).getText(source) === 'store') {
          names.add(element.name.getText(source));
          bindings.add(element.name);
        }
    }
    ts.forEachChild(node, collect);
  };
  const visit = (node: ts.Node) => {
    if (ts.isPropertyAccessExpression(node) && node.name.text === 'store' && isKernel(node.expression))
      note(node);
    else if (ts.isIdentifier(node) && names.has(node.text) && !bindings.has(node)) {
      const parent = node.parent;
      const named =
        (ts.isPropertyAccessExpression(parent) && parent.name === node) ||
        (ts.isPropertyAssignment(parent) && parent.name === node) ||
        ts.isBindingElement(parent) ||
        ts.isPropertySignature(parent);
      if (!named) note(node);
    }
    ts.forEachChild(node, visit);
  };
  collect(source);
  visit(source);
  return found;
}

describe("the kernel's store", () => {
  const files = sources(SRC).map((file) => ({ file, rel: relative(SRC, file) }));
  const uses = files
    .filter(({ rel }) => !STORE_READERS.some((reader) => rel === reader || rel.startsWith(reader)))
    .flatMap(({ file, rel }) => kernelStoreUses(rel, readFileSync(file, 'utf8')));

  it('is found where it is read', () => {
    // A detector that found nothing would pass the checks below.
    const planted = [
      'routes(kernel.store);',
      'const r = deps.kernel.store.accounts;',
      'const { box, store: s } = kernel; s.db.sql; other(s);',
      'function f({ store }: Kernel) { return { store }; }',
      'const { keys } = kernel.store;',
    ].join('\n');
    expect(kernelStoreUses('plant.ts', planted)).toEqual([
      { at: 'plant.ts:1: routes(kernel.store)', whole: true },
      { at: 'plant.ts:2: deps.kernel.store.accounts', whole: false },
      { at: 'plant.ts:3: s.db', whole: false },
      { at: 'plant.ts:3: other(s)', whole: true },
      { at: 'plant.ts:4: store', whole: true },
      { at: 'plant.ts:5: { keys } = kernel.store', whole: false },
    ]);
  });

  it('is read only by the kernel, the root and the installs listed', () => {
    const readers = new Set(uses.map((u) => u.at.split(':')[0]));
    expect([...readers].sort()).toEqual([...STORE_READERS_TO_UNDO].sort());
  });

  it('is never handed on whole: a capability gets its queries from its own install', () => {
    expect(uses.filter((u) => u.whole).map((u) => u.at)).toEqual([]);
  });
});
