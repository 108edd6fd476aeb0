import { defineConfig } from 'vitest/config';

/**
 * The proxy, PDF, CLI and dashboard suites, run against the compiled gateway too. Not here:
 * dashboard-billing (it moves a test clock, which cannot reach another process), and the CLI's
 * other suites (they run the compiled CLI in the integration project already).
 */
const COMPILED_SUITES = [
  'proxy-sdk',
  'pass-through',
  'failures',
  'pdf-damaged',
  'cli',
  'dashboard-admin',
  'dashboard-member',
  // This round's surfaces, as users run them: streams (resume, keep-alive, read timeout),
  // the organization API, model policy, the OTLP receiver and the Files API (an upload over the
  // limit refused while the client still sends).
  'streams',
  'organization-sdk',
  'model-policy',
  'otlp-receiver',
  'surface-files',
  // Member lists and their cursors (a cursor that is no object id is a 400, not a 500).
  'surface-lists',
  // Models and object references named in surface bodies, held to the policy and to ownership.
  'surface-body-checks',
  // Readiness as a balancer sees it: its own database connection, the database going away.
  'health',
  // Claude Code's gateway sign-in over its protocol, and both API versions through the gateway.
  'claude-gateway-protocol',
  'api-versions',
  // The guides (README.md and docs/), found beside the compiled build.
  'dashboard-guides',
  // Asked by the review: upstreams and their failover, the cache figures of reports, the
  // Files/Skills GA surface and the organization API's versions. Not spend-warnings: it waits
  // for each call's charge to reach the in-process ledger (limits.admission.settled()), which
  // the compiled gateway does not show from outside.
  'upstreams',
  // Batches made on an account upstream: followed, read and recorded there by the built follower.
  'upstream-batches',
  // Files made on an account upstream: read, named and listed there by the built gateway.
  'upstream-files',
  'cache-figures',
  'files-skills-ga',
  'org-api-versions',
];

// Unit tests sit beside the code; integration tests (real PostgreSQL, real HTTP servers on
// loopback) live in each package's test/ folder and run as their own project.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts', 'bench/lib/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          globalSetup: ['scripts/vitest-tools-setup.ts'],
          include: ['packages/*/test/**/*.test.ts', 'services/*/test/**/*.test.ts', 'examples/**/*.test.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
          maxWorkers: 2,
          // Files of a worker share its module cache: each integration file imported the gateway's
          // source anew (573 s of import in a 29-minute run; 55 s shared, the run 5 minutes
          // shorter). These files change no module state (no vi.mock, timers or globals; the one
          // that sets process.env puts it back) and each starts the servers it uses.
          isolate: false,
          // Runs after the unit project, which may use every core.
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          // What users run: these suites again, against `node services/gateway/bin/keygate.js serve`
          // built once by the global setup (test/compiled-gateway.ts). The shutdown suites and the
          // demo spawn the compiled build in the integration project already.
          name: 'compiled',
          globalSetup: ['scripts/vitest-tools-setup.ts', 'services/gateway/test/compiled-setup.ts'],
          include: COMPILED_SUITES.map((name) => `services/gateway/test/${name}.test.ts`),
          env: { KEYGATE_TEST_GATEWAY: 'compiled' },
          testTimeout: 30_000,
          hookTimeout: 60_000,
          maxWorkers: 2,
          // Files of a worker share its module cache: each integration file imported the gateway's
          // source anew (573 s of import in a 29-minute run; 55 s shared, the run 5 minutes
          // shorter). These files change no module state (no vi.mock, timers or globals; the one
          // that sets process.env puts it back) and each starts the servers it uses.
          isolate: false,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
