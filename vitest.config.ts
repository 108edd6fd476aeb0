import { defineConfig } from 'vitest/config';

// Unit tests sit beside the code; integration tests (real PostgreSQL, real HTTP servers on
// loopback) live in each package's test/ folder and run as their own project.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts'],
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
          // Runs after the unit project, which may use every core.
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
