// The reference pages under docs/reference/, each generated from the code it describes.
// `pnpm run docs` writes them (scripts/docs.ts); services/gateway/test/reference-docs.test.ts fails
// while one differs from what is on disk.
import { commands } from '../services/gateway/src/cli/commands';
import { documentedRoutes, openApiPath } from '../services/gateway/src/api-docs/openapi';
import { settingsTable, TABLE_END, TABLE_START } from '../services/gateway/src/config-docs';
import { GatewayMetrics } from '../services/gateway/src/metrics/metrics';
import { Prices } from '../services/gateway/src/pricing/prices';
import { appForRouteTable } from '../services/gateway/test/kit/route-table';

const GENERATED = (source: string) =>
  `<!-- generated from ${source} by \`pnpm run docs\` (scripts/reference-docs.ts); do not edit -->`;

/** A cell of a Markdown table: pipes escaped, one line. */
const cell = (s: string) => s.replaceAll('|', '\\|').replaceAll('\n', ' ');

function settingsPage(): string {
  return `# Settings

Every setting of the gateway, read once from the environment at start; a bad value stops the
start with a message naming it. How to choose them: [configuration](../operators/configuration.md).

${TABLE_START}
${settingsTable()}
${TABLE_END}
`;
}

function cliPage(): string {
  const sections = Object.entries(commands).map(
    ([name, c]) => `## keygate ${name}\n\n${c.summary}.\n\n\`\`\`text\n${c.usage.trimEnd()}\n\`\`\`\n`,
  );
  return `# CLI commands

${GENERATED('services/gateway/src/cli/commands.ts')}

\`keygate <command> --help\` prints the same text. From a checkout, \`pnpm keygate …\` runs it
(or \`node services/gateway/bin/keygate.js …\`). Exit codes: 0 success, 1 failure, 2 usage error,
3 nothing changed, 4 not found.

${sections.join('\n')}`;
}

/** The families of routes, by path prefix, in the order the page lists them. */
const FAMILIES: [title: string, test: (path: string) => boolean][] = [
  ['Provider-compatible (app keys)', (p) => p.startsWith('/v1/') && !p.startsWith('/v1/organizations')],
  ['Account API (admin keys)', (p) => p.startsWith('/v1/organizations')],
  ['Operator API (the operator token)', (p) => p.startsWith('/operator/')],
  [
    'Identity provider and SCIM',
    (p) => p.startsWith('/scim/') || p.startsWith('/idp') || p.includes('/device'),
  ],
  ["Claude Code's telemetry (OTLP)", (p) => p.startsWith('/otlp/')],
  ['Dashboard (session cookie)', (p) => p.startsWith('/dashboard')],
  ['Everything else', () => true],
];

function endpointsPage(): string {
  const app = appForRouteTable();
  const summaries = new Map(
    documentedRoutes(app).map((r) => [`${r.method} ${r.path}`, r.spec?.summary ?? '']),
  );
  const seen = new Set<string>();
  const rows: { method: string; path: string; summary: string }[] = [];
  for (const r of app.routes) {
    const id = `${r.method} ${r.path}`;
    if (r.method === 'ALL' || r.path.endsWith('*') || seen.has(id)) continue;
    seen.add(id);
    rows.push({ method: r.method, path: openApiPath(r.path), summary: summaries.get(id) ?? '' });
  }
  const placed = new Set<(typeof rows)[number]>();
  const sections = FAMILIES.map(([title, test]) => {
    const mine = rows.filter((r) => !placed.has(r) && test(r.path));
    for (const r of mine) placed.add(r);
    if (!mine.length) return '';
    const lines = mine.map((r) => `| ${r.method} | \`${cell(r.path)}\` | ${cell(r.summary)} |`);
    return `## ${title}\n\n| method | path | summary |\n|---|---|---|\n${lines.join('\n')}\n`;
  });
  return `# Endpoints

${GENERATED("the gateway's route table (services/gateway/src/app.ts)")}

Every route the gateway serves, in the order it matches them. The account and operator APIs'
request and answer shapes are in the OpenAPI document the gateway serves (\`GET /openapi.json\`,
as a page at \`/docs\`); summaries below come from it.

${sections.filter(Boolean).join('\n')}`;
}

function metricsPage(): string {
  const registry = new GatewayMetrics(new Prices(), {
    callLog: { status: () => ({}) as never, spooled: true },
    limits: () => ({}) as never,
    keyCacheEntries: () => 0,
  }).registry;
  const metrics = registry.getMetricsAsArray() as unknown as {
    name: string;
    help: string;
    type: string;
    labelNames?: string[];
  }[];
  const own = metrics.filter((m) => m.name.startsWith('keygate_'));
  const lines = own.map(
    (m) =>
      `| \`${m.name}\` | ${m.type} | ${(m.labelNames ?? []).map((l) => `\`${l}\``).join(', ')} | ${cell(m.help)} |`,
  );
  return `# Metrics

${GENERATED('the prom-client registry of services/gateway/src/metrics/metrics.ts')}

\`GET /metrics\` in Prometheus' text format, when \`KEYGATE_METRICS_TOKEN\` or
\`KEYGATE_METRICS_PORT\` is set ([metrics and logs](../operators/metrics-and-logs.md)). Beside
these, Node's process metrics (prom-client's defaults: \`process_cpu_seconds_total\`,
\`nodejs_eventloop_lag_seconds\`, …, ${metrics.length - own.length} in all).

| name | type | labels | help |
|---|---|---|---|
${lines.join('\n')}
`;
}

/** Each reference page by its path from the repository's root, as the code makes it now. */
export function referencePages(): Record<string, string> {
  return {
    'docs/reference/settings.md': settingsPage(),
    'docs/reference/cli.md': cliPage(),
    'docs/reference/endpoints.md': endpointsPage(),
    'docs/reference/metrics.md': metricsPage(),
  };
}
