import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Marked, type Tokens } from 'marked';

/** One guide: its path from the repository's root, where the dashboard shows it, its title. */
export interface Guide {
  file: string;
  slug: string;
  title: string;
}

/**
 * Where README.md and docs/ are: beside the compiled code (scripts/build.mjs copies them into
 * dist/cli/guides/), else the repository's root, four folders above this file in src/.
 */
function guidesRoot(): string {
  const built = fileURLToPath(new URL('./guides/', import.meta.url));
  return existsSync(join(built, 'docs')) ? built : fileURLToPath(new URL('../../../../', import.meta.url));
}

/** `docs/claude-code/README.md` → `claude-code`; `docs/apps/streams.md` → `apps/streams`; the root README is the quick start. */
const slugOf = (file: string) =>
  file === 'README.md'
    ? 'quick-start'
    : file === 'docs/README.md'
      ? 'index'
      : file.replace(/^docs\//, '').replace(/(\/README)?\.md$/, '');

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (text: string) =>
  text
    .toLowerCase()
    .replace(/<[^>]*>/g, '')
    .replace(/&#?\w+;/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-');

/** The guides, read once: README.md and every Markdown file under docs/. */
export class Guides {
  readonly #root: string;
  readonly list: Guide[];
  readonly #bySlug: Map<string, Guide>;
  readonly #byFile: Map<string, Guide>;
  readonly #html = new Map<string, string>();

  /** `root` holds README.md and docs/ (a test gives its own). */
  constructor(root = guidesRoot()) {
    this.#root = root;
    const walk = (dir: string): string[] =>
      readdirSync(join(this.#root, dir), { withFileTypes: true })
        .flatMap((e) =>
          e.isDirectory() ? walk(`${dir}/${e.name}`) : e.name.endsWith('.md') ? [`${dir}/${e.name}`] : [],
        )
        .sort();
    this.list = ['README.md', ...walk('docs')].map((file) => ({
      file,
      slug: slugOf(file),
      title:
        file === 'README.md'
          ? 'Quick start'
          : (/^# (.+)$/m.exec(this.#read(file))?.[1]?.replace(/`/g, '') ?? file),
    }));
    this.#bySlug = new Map(this.list.map((g) => [g.slug, g]));
    this.#byFile = new Map(this.list.map((g) => [g.file, g]));
  }

  #read(file: string): string {
    return readFileSync(join(this.#root, file), 'utf8');
  }

  get(slug: string): Guide | undefined {
    return this.#bySlug.get(slug);
  }

  /**
   * The guide as HTML. Markdown's raw HTML is never passed through (comments are dropped, any
   * other tag is shown as text); links to other guides lead to their dashboard page, links
   * elsewhere in the repository (source files) become their text, and only http(s) links leave.
   */
  html(guide: Guide): string {
    let html = this.#html.get(guide.slug);
    if (html === undefined) {
      // Code blocks and tables wider than the page scroll in place, reachable from the keyboard.
      html = this.#marked(guide)
        .parse(this.#read(guide.file), { async: false })
        .replaceAll('<pre>', '<pre tabindex="0">')
        .replaceAll('<table>', '<div class="scroll" tabindex="0"><table>')
        .replaceAll('</table>', '</table></div>');
      this.#html.set(guide.slug, html);
    }
    return html;
  }

  #marked(guide: Guide): Marked {
    const target = (href: string): string | null => {
      if (/^https?:\/\//i.test(href)) return href;
      if (href.startsWith('#')) return href;
      if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('/')) return null;
      const [path, fragment] = href.split('#');
      const file = posix.normalize(posix.join(posix.dirname(guide.file), path!));
      const to = this.#byFile.get(file) ?? this.#byFile.get(posix.join(file, 'README.md'));
      return to ? `/dashboard/guides/${to.slug}${fragment ? `#${fragment}` : ''}` : null;
    };
    return new Marked({
      gfm: true,
      renderer: {
        html: ({ text }) => (/^\s*<!--[\s\S]*-->\s*$/.test(text) ? '' : escapeHtml(text)),
        heading({ tokens, depth }) {
          // The guide's own title is the page's <h1>.
          if (depth === 1) return '';
          const inner = this.parser.parseInline(tokens);
          return `<h${depth} id="${anchorOf(inner)}">${inner}</h${depth}>\n`;
        },
        link({ href, title, tokens }: Tokens.Link) {
          const inner = this.parser.parseInline(tokens);
          const to = target(href);
          if (!to) return inner;
          const external = /^https?:/i.test(to) ? ' rel="noopener noreferrer"' : '';
          return `<a href="${escapeHtml(to)}"${title ? ` title="${escapeHtml(title)}"` : ''}${external}>${inner}</a>`;
        },
        image: ({ text }) => escapeHtml(text),
      },
    });
  }
}
