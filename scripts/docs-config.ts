// Rewrites the settings table of README.md from the config schema (services/gateway/src/config.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import { withSettingsTable } from '../services/gateway/src/config-docs';

const path = new URL('../README.md', import.meta.url);
const before = readFileSync(path, 'utf8');
const after = withSettingsTable(before);
if (after !== before) writeFileSync(path, after);
process.stdout.write(
  after === before ? 'README.md: settings table up to date\n' : 'README.md: settings table rewritten\n',
);
