import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Guides } from './guides';

const root = mkdtempSync(join(tmpdir(), 'keygate-guides-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(join(root, 'docs/apps'), { recursive: true });
writeFileSync(join(root, 'README.md'), '# Keygate\n\nSee [the apps guide](docs/apps/README.md#step-2).\n');
writeFileSync(join(root, 'docs/README.md'), '# Index\n\n- [Streams](apps/streams.md)\n');
writeFileSync(join(root, 'docs/apps/README.md'), '# Apps\n\n## Step 2\n\nText.\n');
writeFileSync(
  join(root, 'docs/apps/streams.md'),
  [
    '# Streams',
    '<!-- generated: a comment -->',
    '<script>alert(1)</script>',
    'Inline <img src=x onerror="alert(2)"> and `code <b>`.',
    '[bad](javascript:alert(3)) [source](../../services/gateway/src/app.ts) [out](https://example.com/x)',
    '![a picture](https://example.com/p.png)',
    '| a | b |\n|---|---|\n| `x` | y |',
  ].join('\n\n'),
);
const guides = new Guides(root);

describe('guides rendered for the dashboard', () => {
  it('lists README.md as the quick start and every file under docs/, by title', () => {
    expect(guides.list.map((g) => [g.slug, g.title])).toEqual([
      ['quick-start', 'Quick start'],
      ['index', 'Index'],
      ['apps', 'Apps'],
      ['apps/streams', 'Streams'],
    ]);
    expect(guides.get('../README')).toBeUndefined();
  });

  it('passes no raw HTML through: comments dropped, tags shown as text, images as their words', () => {
    const html = guides.html(guides.get('apps/streams')!);
    expect(html).not.toMatch(/<script|<img|<!--/);
    expect(html).toContain('&#60;img src=x onerror=&#34;alert(2)&#34;&#62;');
    expect(html).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
    expect(html).toContain('<code>code &lt;b&gt;</code>');
    expect(html).toContain('a picture');
    expect(html).toContain('<div class="scroll" tabindex="0"><table>');
  });

  it('links: guides to their pages, anchors kept; source files as text; only http(s) leaves; never javascript:', () => {
    expect(guides.html(guides.get('quick-start')!)).toContain(
      '<a href="/dashboard/guides/apps#step-2">the apps guide</a>',
    );
    expect(guides.html(guides.get('index')!)).toContain(
      '<a href="/dashboard/guides/apps/streams">Streams</a>',
    );
    expect(guides.html(guides.get('apps')!)).toContain('<h2 id="step-2">Step 2</h2>');
    const html = guides.html(guides.get('apps/streams')!);
    expect(html).not.toContain('javascript:');
    expect(html).toContain('<p>bad source <a href="https://example.com/x"');
    expect(html).not.toContain('href="../../services');
    expect(html).toContain('<a href="https://example.com/x" rel="noopener noreferrer">out</a>');
  });
});
