import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const PRICING = dirname(new URL(import.meta.url).pathname);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.ts$/.test(name) && !name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Names bound by `let` or `var` at a file's top level: state every gateway in the process would share. */
function moduleLets(text: string): string[] {
  const file = ts.createSourceFile('module.ts', text, ts.ScriptTarget.Latest);
  return file.statements
    .filter(ts.isVariableStatement)
    .filter((s) => (s.declarationList.flags & ts.NodeFlags.Const) === 0)
    .flatMap((s) => s.declarationList.declarations.map((d) => d.name.getText(file)));
}

describe('pricing holds no module state', () => {
  it('no file under pricing/ binds a module-level let or var (each gateway is given its own Prices)', () => {
    const found = sources(PRICING).flatMap((path) =>
      moduleLets(readFileSync(path, 'utf8')).map((name) => `${relative(PRICING, path)}: ${name}`),
    );
    expect(sources(PRICING).length).toBeGreaterThan(3);
    expect(found).toEqual([]);
  });

  it('the check sees a module-level let or var, and not a const or a let inside a function', () => {
    const text =
      'let active = 1;\nvar old = 0;\nconst fixed = 2;\nfunction f() { let inner = 3; return inner; }\n';
    expect(moduleLets(text)).toEqual(['active', 'old']);
  });
});
