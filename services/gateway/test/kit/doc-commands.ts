import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export const ROOT = join(import.meta.dirname, '../../../..');

/** One command line of a fenced `sh`/`bash` block: continuation lines joined, comment lines left out. */
export interface DocCommand {
  /** From the repository's root: `README.md`, `docs/operators/health.md`. */
  file: string;
  /** The line the command starts on. */
  line: number;
  text: string;
}

/** README.md, then every Markdown file under docs/, in path order. */
export function docFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true })
      .flatMap((e) =>
        e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
      )
      .sort();
  return ['README.md', ...walk(join(ROOT, 'docs')).map((f) => relative(ROOT, f))];
}

export function commandsOf(file: string): DocCommand[] {
  const out: DocCommand[] = [];
  let inBlock: 'sh' | 'other' | null = null;
  let pending: DocCommand | null = null;
  readFileSync(join(ROOT, file), 'utf8')
    .split('\n')
    .forEach((raw, i) => {
      const line = raw.trim();
      if (line.startsWith('```')) {
        inBlock = inBlock ? null : /^```(sh|bash)$/.test(line) ? 'sh' : 'other';
        return;
      }
      if (inBlock !== 'sh') return;
      if (pending) {
        pending.text += ` ${line.replace(/\\$/, '').trim()}`;
        if (!line.endsWith('\\')) pending = null;
        return;
      }
      if (!line || line.startsWith('#')) return;
      const command = { file, line: i + 1, text: line.replace(/\\$/, '').trim() };
      out.push(command);
      if (line.endsWith('\\')) pending = command;
    });
  return out;
}

/** The placeholders a guide writes for values an earlier command printed, and how to find those values. */
export const PLACEHOLDERS: { written: string; printed: RegExp }[] = [
  { written: 'acct_…', printed: /\bacct_[A-Za-z0-9]{10,}/g },
  { written: 'key_…', printed: /\bkey_[A-Za-z0-9]{10,}/g },
  { written: 'kg_live_…', printed: /\bkg_live_[A-Za-z0-9_-]+/g },
  { written: 'kg_test_…', printed: /\bkg_test_[A-Za-z0-9_-]+/g },
  { written: 'kg_admin_…', printed: /\bkg_admin_[A-Za-z0-9_-]+/g },
];

/** What the commands run so far printed (the last of each placeholder) and exported. */
export class DocSession {
  readonly values = new Map<string, string>();
  readonly env: Record<string, string> = {};

  constructor(readonly fixed: { gatewayUrl: string; keygate: string; providerKey: string }) {}

  /** The command as it runs here: the gateway's address, the compiled CLI, placeholders filled. */
  fill(c: DocCommand): string {
    let text = c.text
      .replaceAll('http://127.0.0.1:8080', this.fixed.gatewayUrl)
      .replace(/(^|[|&;]\s*|\s)pnpm keygate /g, `$1${this.fixed.keygate} `)
      .replaceAll('sk-ant-…', this.fixed.providerKey);
    for (const { written } of PLACEHOLDERS) {
      if (!text.includes(written)) continue;
      const value = this.values.get(written);
      if (!value)
        throw new Error(`${c.file}:${c.line}: \`${written}\` is used before any command above printed one`);
      text = text.replaceAll(written, value);
    }
    return text;
  }

  /** `export NAME=value` lines are kept for the commands after them, as a shell keeps them. */
  exported(text: string): boolean {
    const m = /^export (\w+)=(\S+)(\s+#.*)?$/.exec(text);
    if (!m) return false;
    this.env[m[1]!] = m[2]!.replace(/^"(.*)"$/, '$1');
    return true;
  }

  read(stdout: string): void {
    for (const { written, printed } of PLACEHOLDERS) {
      const last = stdout.match(printed)?.at(-1);
      if (last) this.values.set(written, last);
    }
  }
}

/** A refusal in the provider's error shape (`{"type": "error", …}`) or the CLI's `--json` error. */
export function errorAnswer(stdout: string): string | null {
  try {
    const body = JSON.parse(stdout) as { type?: string; error?: unknown };
    return body && (body.type === 'error' || body.error) ? stdout : null;
  } catch {
    return null;
  }
}
