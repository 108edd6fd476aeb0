import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EnvSchema } from './config';
import { settingsTable, TABLE_END, TABLE_START, withSettingsTable } from './config-docs';

const SETTINGS = new URL('../../../docs/reference/settings.md', import.meta.url);

describe('the settings reference (docs/reference/settings.md)', () => {
  it('is the one generated from the config schema (run `pnpm run docs` after changing a setting)', () => {
    const page = readFileSync(SETTINGS, 'utf8');
    expect(withSettingsTable(page)).toBe(page);
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
