import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EnvSchema } from './config';
import { settingsTable, TABLE_END, TABLE_START, withSettingsTable } from './config-docs';

const README = new URL('../../../README.md', import.meta.url);

describe("the README's settings table", () => {
  it('is the one generated from the config schema (run `pnpm exec tsx scripts/docs-config.ts` after changing a setting)', () => {
    const readme = readFileSync(README, 'utf8');
    expect(withSettingsTable(readme)).toBe(readme);
  });

  it('has every setting, with its default', () => {
    const table = settingsTable();
    for (const name of Object.keys(EnvSchema.shape)) expect(table).toContain(`| \`${name}\` |`);
    expect(table).toContain('| `KEYGATE_LOG_LEVEL` | `info` |');
    expect(table).toContain('| `KEYGATE_KEY_CACHE_TTL_MS` | `30000` |');
    expect(table).toContain('| `KEYGATE_FLUSH_INTERVAL_MS` | `250` |');
    expect(table).toContain('| `DATABASE_URL` | (embedded) |');
  });

  it('replaces only what lies between the markers', () => {
    const text = `# Title\n\n${TABLE_START}\n| stale |\n${TABLE_END}\n\nAfter.\n`;
    const out = withSettingsTable(text);
    expect(out).not.toContain('| stale |');
    expect(out.startsWith(`# Title\n\n${TABLE_START}\n| variable |`)).toBe(true);
    expect(out.endsWith(`|\n${TABLE_END}\n\nAfter.\n`)).toBe(true);
    expect(() => withSettingsTable('# no markers')).toThrow(/markers are missing/);
  });
});
