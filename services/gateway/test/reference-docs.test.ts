import { existsSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { referencePages } from '../../../scripts/reference-docs';
import { docFiles, ROOT } from './kit/doc-commands';

const pages = referencePages();

describe('docs/reference/ is what the code makes it (run `pnpm run docs` after a change)', () => {
  it.each(Object.keys(pages))('%s is current', (path) => {
    expect(readFileSync(join(ROOT, path), 'utf8')).toBe(pages[path]);
  });

  it('each page holds what its source has: every CLI command, every metric, every setting, the routes', () => {
    expect(pages['docs/reference/cli.md']).toContain('## keygate key create\n');
    expect(pages['docs/reference/cli.md']).toContain('Usage: keygate key update KEY_ID');
    expect(pages['docs/reference/metrics.md']).toMatch(
      /\| `keygate_calls_total` \| counter \| `account`, `model`/,
    );
    expect(pages['docs/reference/metrics.md']).toMatch(
      /\| `keygate_upstream_latency_seconds` \| histogram \|/,
    );
    expect(pages['docs/reference/settings.md']).toContain('| `KEYGATE_BILLING` | `on` |');
    expect(pages['docs/reference/endpoints.md']).toContain('| POST | `/v1/messages` |');
    expect(pages['docs/reference/endpoints.md']).toMatch(
      /\| POST \| `\/v1\/organizations\/spend_limits` \| \S/,
    );
  });
});

/** Guides other engineers write in parallel; linked from here before they land. */
const WRITTEN_ELSEWHERE = new Set(['docs/claude-code/sign-in.md', 'docs/operators/workload-tokens.md']);

describe('README.md and docs/ link only to files that exist', () => {
  it.each(docFiles())('%s', (file) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const broken = [...text.matchAll(/\]\(([^)\s]+)\)/g)]
      .map((m) => m[1]!)
      .filter((href) => !/^[a-z][a-z0-9+.-]*:|^#/i.test(href))
      .map((href) => posix.normalize(posix.join(posix.dirname(file), href.split('#')[0]!)))
      .filter((path) => !existsSync(join(ROOT, path)) && !WRITTEN_ELSEWHERE.has(path));
    expect(broken).toEqual([]);
  });
});
