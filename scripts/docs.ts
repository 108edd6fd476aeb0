// `pnpm run docs`: writes every generated reference page under docs/reference/ from the code.
import { readFileSync, writeFileSync } from 'node:fs';
import { referencePages } from './reference-docs';

const root = new URL('../', import.meta.url);
for (const [path, text] of Object.entries(referencePages())) {
  const file = new URL(path, root);
  let before = '';
  try {
    before = readFileSync(file, 'utf8');
  } catch {}
  if (before !== text) writeFileSync(file, text);
  process.stdout.write(`${path}: ${before === text ? 'up to date' : 'written'}\n`);
}
