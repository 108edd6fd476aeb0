import { z } from 'zod';
import { EnvSchema } from './config';

export const TABLE_START = '<!-- settings:start (generated from services/gateway/src/config.ts) -->';
export const TABLE_END = '<!-- settings:end -->';

interface SettingSchema {
  description?: string;
  unset?: string;
  default?: unknown;
  enum?: unknown[];
}

const code = (v: unknown) => `\`${String(v)}\``;

/** The settings table, one row per setting of the config schema, in its order. */
export function settingsTable(): string {
  const json = z.toJSONSchema(EnvSchema, { io: 'input', unrepresentable: 'any' }) as {
    properties: Record<string, SettingSchema>;
  };
  const rows = Object.entries(json.properties).map(([name, s]) => {
    if (!s.description) throw new Error(`config.ts: ${name} has no description`);
    const fallback = s.default !== undefined ? code(s.default) : (s.unset ?? '(none)');
    const values = s.enum ? ` (${s.enum.map(code).join(', ')})` : '';
    return `| \`${name}\` | ${fallback} | ${s.description}${values} |`;
  });
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

/** A page (docs/reference/settings.md) with its settings table, between the markers, generated anew. */
export function withSettingsTable(readme: string): string {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start === -1 || end < start)
    throw new Error(`the settings table markers are missing (${TABLE_START} … ${TABLE_END})`);
  return `${readme.slice(0, start + TABLE_START.length)}\n${settingsTable()}\n${readme.slice(end)}`;
}
