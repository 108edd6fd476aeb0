import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './arms';

/**
 * Puts a script's section into bench/RESULTS.md between `<!-- name -->` and `<!-- /name -->`
 * (the section holds both markers): replaced where it stands, appended the first time; the rest
 * of the file is left as it is.
 */
export function writeResultsSection(name: string, section: string): void {
  const file = join(ROOT, 'bench', 'RESULTS.md');
  const current = readFileSync(file, 'utf8');
  const marked = new RegExp(`<!-- ${name} -->[\\s\\S]*<!-- /${name} -->\\n?`);
  writeFileSync(
    file,
    marked.test(current) ? current.replace(marked, () => section) : `${current.trimEnd()}\n\n${section}`,
  );
}
